/* Equal work, taken in turns under one coarse spin lock: each worker holds the lock through its
 * whole part, so the one that did not get it first spins all that while, then does its part.
 *
 * Demonstrates: spinning that makes one thread finish last. Both workers compute the same; the
 * second is on a CPU twice as long (its spin, then its work) and ends when the first has long
 * finished. Its extra CPU time is spinning, not work.
 * Correct diagnosis: spinning (busy-waiting) in spin_lock (spin_turns.c) from worker, about a
 * third of the workers' time; NOT load imbalance (the split is even: nothing to rebalance).
 * Usage: spin_turns [threads=2] [total work=600, split evenly between the threads] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "truth.h"

static atomic_int lock_word;
static long per_thread;

__attribute__((noinline)) static void spin_lock(atomic_int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire))
        while (atomic_load_explicit(l, memory_order_relaxed)) __builtin_ia32_pause();
}

__attribute__((noinline)) static double crunch(long units) {
    double sum = 0;
    for (long i = 0; i < units; i++)
        for (int k = 0; k < 1000000; k++) sum += 1.0 / (1.0 + (double)(i * 1000000 + k) * 1e-9);
    return sum;
}

static void *worker(void *arg) {
    truth_start();
    (void)arg;
    spin_lock(&lock_word);
    double r = crunch(per_thread);
    atomic_store_explicit(&lock_word, 0, memory_order_release);
    truth_end("worker");
    return (void *)(long)r;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    per_thread = arg_or(argc, argv, 2, 600) / threads;
    pthread_t t[256];
    long total = 0;
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("%ld\n", total);
    truth_end("main");
    return 0;
}
