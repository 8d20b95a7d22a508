/* Faithfulness case: mutex_shared.c's two threads taking one shared pthread mutex 5 million times
 * in total, counting in the program how often the lock changed hands (the thread that takes it is
 * not the one that last held it). Prints the counter and the hand-offs. The threads start their
 * loops together (a spin on a counter, no futex), so that they overlap whenever two CPUs are free. The lock is a global of a
 * non-PIE build, so that a kernel tracepoint filter can name its futex word (faithfulness.sh). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define TOTAL 5000000

pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counter, handoffs;
static int last_owner = -1, arrived;

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    __atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < 2) __builtin_ia32_pause();
    for (int i = 0; i < TOTAL / 2; i++) {
        pthread_mutex_lock(&lock);
        counter = counter * 3 + 1;
        if (last_owner != me) handoffs++;
        last_owner = me;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) != 0) return 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%llu handoffs %llu\n", (unsigned long long)counter, (unsigned long long)handoffs);
    return 0;
}
