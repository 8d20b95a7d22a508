/* Two threads of an OpenMP team add to one counter under an omp lock (`lock`) or in a critical
 * section (`critical`), built with GCC (Debian's libgomp) or clang (Debian's LLVM libomp). Each
 * hold does some work, so the other thread waits. `quiet` gives each thread its own lock: the
 * same calls, no contention (the control). Every 16th hold also sleeps 0.5 ms, so that the other
 * thread waits for the lock even on a machine too busy to run both at once.
 *   omp_lock [contended|quiet] [lock|critical] [rounds]   (OMP_NUM_THREADS=2) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long work(unsigned long x, int n) {
    for (int i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

struct guarded {
    omp_lock_t lock;
    unsigned long value;
    char pad[64];
};

int main(int argc, char **argv) {
    int quiet = argc > 1 && strcmp(argv[1], "quiet") == 0;
    int critical = argc > 2 && strcmp(argv[2], "critical") == 0;
    long rounds = argc > 3 ? atol(argv[3]) : 2000;
    static struct guarded shared, own[64];
    omp_init_lock(&shared.lock);
    for (int i = 0; i < 64; i++) omp_init_lock(&own[i].lock);
#pragma omp parallel
    {
        int t = omp_get_thread_num();
        unsigned long x = t + 1;
        struct guarded *g = quiet ? &own[t % 64] : &shared;
        for (long i = 0; i < rounds; i++) {
            x = work(x, 10000);
            if (critical && !quiet) {
#pragma omp critical(counter) /* MARK critical */
                {
                    shared.value += work(x, 100000) & 1;
                    if (i % 16 == 0) usleep(500);
                }
            } else {
                omp_set_lock(&g->lock); /* MARK lock */
                g->value += work(x, 100000) & 1;
                if (i % 16 == 0) usleep(500);
                omp_unset_lock(&g->lock);
            }
        }
    }
    unsigned long total = shared.value;
    for (int i = 0; i < 64; i++) total += own[i].value;
    printf("%lu\n", total);
    return 0;
}
