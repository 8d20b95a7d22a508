/* Faithfulness case: mutex_handoffs.c's loop with an OpenMP named critical section instead of a
 * pthread mutex: the two threads of one parallel region take it 5 million times in total,
 * counting in the program how often it changed hands. With libgomp the section's word is the
 * program's own `.gomp_critical_user_handoff.var` (a global of a non-PIE build, so that a kernel
 * tracepoint filter can name it: faithfulness.sh). Prints the counter and the hand-offs. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

#define TOTAL 5000000

int main(void) {
    uint64_t counter = 0, handoffs = 0;
    int last_owner = -1, arrived = 0;
#pragma omp parallel num_threads(2)
    {
        int me = omp_get_thread_num();
        __atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL);
        while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < 2) __builtin_ia32_pause();
        for (int i = 0; i < TOTAL / 2; i++) {
#pragma omp critical(handoff)
            {
                counter = counter * 3 + 1;
                if (last_owner != me) handoffs++;
                last_owner = me;
            }
        }
    }
    printf("%llu handoffs %llu\n", (unsigned long long)counter, (unsigned long long)handoffs);
    return 0;
}
