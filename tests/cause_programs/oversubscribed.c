/* More compute threads than CPUs: N threads (default 16) share a fixed amount of independent
 * computation, on a machine with fewer CPUs (2 in CI).
 *
 * Demonstrates: oversubscription. Each thread is runnable all its life but on a CPU only about
 * CPUs/N of it: the rest is run-queue delay (/proc/self/task/TID/schedstat, second field). The
 * program runs about as fast as with 2 threads (a little slower: more context switches, caches
 * shared), so it is not a scaling bug, but every other figure per thread must account for the
 * time spent waiting for a CPU instead of leaving it "unaccounted".
 * Correct diagnosis: runnable / waiting for a CPU ~ (1 - CPUs/N) of each thread's life (87% at
 * 16 threads on 2 CPUs); oversubscription: 16 runnable threads on 2 CPUs. At most a low/info
 * finding ("use as many threads as CPUs"); NOT compute-bound at 100% efficiency, NOT unaccounted.
 * Usage: oversubscribed [threads=16] [total work=9600] */
#include <pthread.h>
#include <stdio.h>
#include "truth.h"

static long per_thread;

__attribute__((noinline)) static double simulate(long n, double seed) {
    double x = seed;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 100000; k++) x = x * 0.99999 + 1e-6 * (double)(k & 7);
    return x;
}

static void *worker(void *arg) {
    truth_start();
    double x = simulate(per_thread, (double)(long)arg);
    truth_end("worker");
    return (void *)(long)x;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 16);
    if (threads > 1024) threads = 1024;
    per_thread = arg_or(argc, argv, 2, 9600) / threads;
    static pthread_t t[1024];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
