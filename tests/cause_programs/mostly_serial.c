/* A mostly serial program: main computes alone for most of the run, then starts 2 workers for a
 * short parallel part (8-10 ms), and the user asked for 2 threads.
 *
 * Demonstrates: a program whose parallel part is too short to count as running in parallel
 * (the concurrency figures see less than 100 ms with 2 threads wanting a CPU, so there is no
 * serial-section finding). Correct diagnosis: mostly serial, one thread running about 95% of
 * the wall time in serial_part (mostly_serial.c), the workers a few percent; remedy:
 * parallelize serial_part.
 * Usage: mostly_serial [threads=2] [serial ms=420] [parallel ms=8] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double thread_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile double sink;
static double parallel_ms;

/* Computes for `ms` of this thread's CPU time (the same work on a loaded machine). */
__attribute__((noinline)) static double burn(double ms) {
    double x = 1.0, start = thread_ms();
    while (thread_ms() - start < ms)
        for (int k = 0; k < 2000; k++) x = x * 1.0000001 + 1e-9;
    return x;
}

__attribute__((noinline)) static double serial_part(double ms) { return burn(ms); }

static void *worker(void *arg) {
    (void)arg;
    sink += burn(parallel_ms);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    double serial_ms = argc > 2 ? atof(argv[2]) : 420;
    parallel_ms = argc > 3 ? atof(argv[3]) : 8;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    double t0 = now_ms();
    sink += serial_part(serial_ms);
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%.0f ms\n", now_ms() - t0);
    return 0;
}
