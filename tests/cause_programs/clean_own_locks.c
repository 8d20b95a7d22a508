/* Clean case: each thread takes a mutex of its own, on a cache line of its own, tens of millions
 * of times (a per-object lock that is never shared). Scales to the CPUs.
 *
 * Demonstrates: nothing wrong. Every acquisition is uncontended: the lock call's atomic
 * instruction finds the lock word in the thread's own cache, as it would with one thread; the
 * lock calls are a large share of each worker's CPU time, but no thread waits.
 * Correct diagnosis: no lock wait (the lock table: 0 contended, 0 ns), the workers' CPU samples in
 * the lock calls computation; no finding about locks or atomics, no parallel efficiency blamed on
 * them. It read "lock waits 88.9%" (high) when a CPU sample in a lock call was taken for a wait.
 * Usage: clean_own_locks [threads=2] [acquisitions per thread=60000000] */
#include <pthread.h>
#include <stdio.h>
#include "truth.h"

struct own {
    pthread_mutex_t lock;
    volatile long count;
} __attribute__((aligned(128)));

static struct own owns[256];
static long per_thread;

static void *worker(void *arg) {
    truth_start();
    struct own *o = arg;
    for (long i = 0; i < per_thread; i++) {
        pthread_mutex_lock(&o->lock);
        o->count += i & 7;
        pthread_mutex_unlock(&o->lock);
    }
    truth_end("worker");
    return NULL;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    per_thread = arg_or(argc, argv, 2, 60000000);
    pthread_t t[256];
    for (int i = 0; i < threads; i++) {
        pthread_mutex_init(&owns[i].lock, NULL);
        pthread_create(&t[i], NULL, worker, &owns[i]);
    }
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += owns[i].count;
    }
    printf("%ld\n", total);
    truth_end("main");
    return 0;
}
