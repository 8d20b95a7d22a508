/* Shared by the throughput workloads of benches/programs/: a small random generator, a clock, and
 * the timed run (threads released together, stopped after a fixed time, operations counted). */
#ifndef WORKLOAD_COMMON_H
#define WORKLOAD_COMMON_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t wl_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double wl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline long wl_arg(int argc, char **argv, int i, long fallback) {
    return argc > i ? atol(argv[i]) : fallback;
}

/* Set by the main thread when the measured time is over; workers look at it every few hundred
 * operations. */
static volatile int wl_stop;

struct wl_run {
    pthread_barrier_t start; /* workers and main */
    double seconds;
};
/* Runs `n` workers for wl_run.seconds after they are all ready and returns the time measured.
 * Workers call wl_ready() once set up, work until wl_stop, then clean up (not measured). */
static struct wl_run wl_run;

static inline void wl_ready(void) { pthread_barrier_wait(&wl_run.start); }

static inline double wl_timed_run(int n, void *(*worker)(void *), void **args, void **results) {
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t) exit(1);
    pthread_barrier_init(&wl_run.start, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, worker, args[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(1);
        }
    pthread_barrier_wait(&wl_run.start);
    double t0 = wl_now();
    struct timespec ts = {(time_t)wl_run.seconds, (long)((wl_run.seconds - (double)(time_t)wl_run.seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    wl_stop = 1;
    double elapsed = wl_now() - t0; /* workers count what they did until they see the flag */
    for (int i = 0; i < n; i++) pthread_join(t[i], results ? &results[i] : NULL);
    pthread_barrier_destroy(&wl_run.start);
    free(t);
    return elapsed;
}

/* The line benches/overhead.sh reads. */
static inline void wl_report(const char *name, double ops, double seconds) {
    printf("%s: %.0f operations in %.3f s\nthroughput %.0f\n", name, ops, seconds, ops / seconds);
}

#endif
