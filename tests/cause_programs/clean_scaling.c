/* Clean case: compute-bound threads on private data, an even static split. Scales to the CPUs.
 *
 * Demonstrates: nothing wrong. Each thread integrates over its own range with no shared writes,
 * no locks and no allocation in the loop; 2 threads take about half the time of 1.
 * Correct diagnosis: compute ~100% of each worker's life on a quiet machine (on a loaded one the
 * rest is runnable / waiting for a CPU, named as such), effective utilization "ideal" during the
 * parallel part; NO finding at medium or high (no serial section, no imbalance, no spinning).
 * main waiting in join is not a cause.
 * Usage: clean_scaling [threads=2] [total work=8000] */
#include <pthread.h>
#include <stdio.h>
#include "truth.h"

static long per_thread;

__attribute__((noinline)) static double integrate(long begin, long end) {
    double sum = 0;
    for (long i = begin; i < end; i++)
        for (int k = 0; k < 100000; k++) sum += 1.0 / (1.0 + (double)(i * 100000 + k) * 1e-9);
    return sum;
}

static void *worker(void *arg) {
    truth_start();
    long id = (long)arg;
    double r = integrate(id * per_thread, (id + 1) * per_thread);
    truth_end("worker");
    return (void *)(long)r;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    per_thread = arg_or(argc, argv, 2, 8000) / threads;
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
