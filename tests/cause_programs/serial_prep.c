/* A long single-threaded preparation before a short parallel part, in the common shape: main
 * prepares the input, starts the workers, joins them.
 *
 * Demonstrates: a serial section. main spends about 80% of the 1-thread run in prepare_input
 * (filling and sorting an array) before any worker exists; the workers then sum a function over
 * their halves. Two threads are barely faster than one (Amdahl: at most 1/(0.8 + 0.2/2) = 1.11x).
 * Correct diagnosis: serial section in prepare_input (serial_prep.c) on main, ~80% of wall time at
 * 1 thread, ~90% at 2; one thread running while the CPUs are free. Remedy: parallelize or
 * overlap the preparation. main waiting in pthread_join afterwards is NOT a cause, and the
 * workers are fine.
 * Usage: serial_prep [threads=2] [elements=6000000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "truth.h"

static double *input;
static long elements;
static int threads;

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) static void prepare_input(void) {
    unsigned long s = 88172645463325252ul;
    for (long i = 0; i < elements; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        input[i] = (double)(s >> 11) * 0x1.0p-53;
    }
    qsort(input, (size_t)elements, sizeof *input, by_value);
}

static void *worker(void *arg) {
    truth_start();
    long id = (long)arg, per = elements / threads;
    long begin = id * per, end = id == threads - 1 ? elements : begin + per;
    double sum = 0;
    for (long i = begin; i < end; i++) {
        double x = input[i];
        for (int k = 0; k < 20; k++) x = x * (1.5 - 0.5 * x * x) + 1e-9;
        sum += x;
    }
    truth_end("worker");
    double *out = malloc(sizeof *out);
    *out = sum;
    return out;
}

int main(int argc, char **argv) {
    truth_start();
    threads = (int)arg_or(argc, argv, 1, 2);
    elements = arg_or(argc, argv, 2, 6000000);
    if (threads > 256) threads = 256;
    input = malloc((size_t)elements * sizeof *input);
    prepare_input();
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    double total = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += *(double *)r;
        free(r);
    }
    printf("total %f\n", total);
    truth_end("main");
    return 0;
}
