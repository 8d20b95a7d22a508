/* Two threads fight over one pthread mutex: each locks and unlocks it ITERATIONS times, doing a
 * little work inside the critical section and less outside, after starting together at a
 * barrier. Every 4th iteration yields the CPU once while holding the lock and once after releasing
 * it: glibc's mutex is not fair (the releasing thread usually takes it straight back), and the
 * yields make the threads hand the lock over often whether they run on two cores or share one.
 * Prints the mutex's address (so the test can find it in the report) and the iteration count. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERATIONS 200000

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static volatile uint64_t counter;
static volatile uint64_t outside;

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < ITERATIONS; i++) {
        pthread_mutex_lock(&shared);
        for (int k = 0; k < 40; k++) counter = counter * 6364136223846793005ull + seed + (uint64_t)k;
        if (i % 4 == 0) sched_yield();
        pthread_mutex_unlock(&shared);
        for (int k = 0; k < 5; k++) outside += (uint64_t)k;
        if (i % 4 == 2) sched_yield();
    }
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_barrier_init(&start, NULL, 2);
    if (pthread_create(&a, NULL, worker, (void *)1) != 0) return 10;
    if (pthread_create(&b, NULL, worker, (void *)3) != 0) return 11;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("mutex %p iterations %d\n", (void *)&shared, 2 * ITERATIONS);
    return 0;
}
