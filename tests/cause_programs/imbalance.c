/* Static partitioning with uneven work: the first thread gets 4x the work of each other thread.
 *
 * Demonstrates: load imbalance. With 2 threads the work is split 4:1, so thread 1 finishes after
 * a quarter of the parallel part and the program is only 1.25x faster than with 1 thread (an even
 * split would give 2x). With rounds > 1 the threads meet at a
 * pthread_barrier after each round (the OpenMP/"parallel for" shape): the light threads wait in
 * pthread_barrier_wait instead of ending.
 * Correct diagnosis: load imbalance: the heavy thread (crunch, called from worker 0) runs alone
 * for ~75% of the parallel part while the other threads have ended (rounds=1) or wait at the
 * barrier (rounds>1). Remedy: dynamic scheduling (an atomic work index, smaller chunks). NOT
 * "blocking" as a cause by itself, NOT main's join.
 * Usage: imbalance [threads=2] [total work units=12000] [rounds=1] */
#include <pthread.h>
#include <stdio.h>
#include "truth.h"

static int threads;
static long units, rounds;
static pthread_barrier_t barrier;

__attribute__((noinline)) static double crunch(long n, double seed) {
    double x = seed;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 60000; k++) x = x * 0.9999999 + 1e-7 * (double)(k & 15);
    return x;
}

static void *worker(void *arg) {
    truth_start();
    long id = (long)arg;
    /* weights: thread 0 has 4, every other thread 1 */
    long total_weight = 4 + (threads - 1);
    long mine = (id == 0 ? 4 : 1) * units / total_weight / rounds;
    double x = 0;
    for (long r = 0; r < rounds; r++) {
        x = crunch(mine, x + (double)id); /* depends on the last round: not hoisted */
        if (rounds > 1) pthread_barrier_wait(&barrier);
    }
    truth_end(id == 0 ? "heavy" : "light");
    return (void *)(long)x;
}

int main(int argc, char **argv) {
    truth_start();
    threads = (int)arg_or(argc, argv, 1, 2);
    units = arg_or(argc, argv, 2, 12000);
    rounds = arg_or(argc, argv, 3, 1);
    if (threads > 256) threads = 256;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
