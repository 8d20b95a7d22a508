/* Workers that take one mutex for a few microseconds of work and sleep after releasing it: the
 * lock is never held across the sleep, but each wait ends some 50 µs after the release (the
 * waiter's wake-up), while the thread that released it is already asleep. Correct diagnosis: no
 * "lock held while its holder sleeps" (tests/findings_real.rs); contention at most.
 * Usage: sleepy_workers [threads=8] [work in the hold=2000] [sleep after it, µs=50] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile double acc;
static int iters = 4000, hold_work = 2000, sleep_us = 50;
static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < iters; i++) {
        pthread_mutex_lock(&m);
        for (int k = 0; k < hold_work; k++) acc += k * 0.5;
        pthread_mutex_unlock(&m);
        if (sleep_us) usleep(sleep_us);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 8;
    if (argc > 2) hold_work = atoi(argv[2]);
    if (argc > 3) sleep_us = atoi(argv[3]);
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    printf("%f\n", acc);
    return 0;
}
