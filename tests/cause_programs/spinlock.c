/* A hand-written spinlock: test-and-test-and-set (an atomic exchange, then a loop of plain loads
 * with `pause` until the word looks free).
 *
 * Demonstrates: spinning. Each thread does a little private work, then takes the spinlock and
 * updates shared state for longer; with 2 threads one of them mostly spins in spin_lock while
 * the other holds the lock, so 2 threads are slower than 1 (the cache line of the shared state
 * also moves between cores).
 * Correct diagnosis: spinning (busy-waiting) in spin_lock (spinlock.c, the `pause` loop) called
 * from worker, roughly a third to a half of the workers' time at 2 threads; remedy: a lock that
 * sleeps (pthread_mutex, adaptive) or less work under the lock. NOT "compute", NOT "atomic
 * contention" only. With CAUSE_TRUTH=1 each worker also prints the wall time it spent inside
 * spin_lock ("truth-spin ... spin_lock_ns=", TSC-timed; on a quiet machine ~ its spinning CPU time).
 * Usage: spinlock [threads=2] [total iterations=6000000, split evenly between the threads] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <x86intrin.h>
#include "truth.h"

static atomic_int lock_word;
static volatile unsigned long shared_state[8];
static long iterations;
static int measure_spin; /* CAUSE_TRUTH: time each spin_lock call with the TSC */
static double ns_per_tick;

__attribute__((noinline)) static void spin_lock(atomic_int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire))
        while (atomic_load_explicit(l, memory_order_relaxed)) __builtin_ia32_pause();
}

__attribute__((noinline)) static void spin_unlock(atomic_int *l) {
    atomic_store_explicit(l, 0, memory_order_release);
}

static void *worker(void *arg) {
    truth_start();
    unsigned long x = (unsigned long)arg + 1, mine = 0;
    unsigned long long spin_ticks = 0;
    for (long i = 0; i < iterations; i++) {
        for (int k = 0; k < 20; k++) mine += (x = x * 6364136223846793005ul + 1442695040888963407ul) >> 60;
        if (measure_spin) {
            unsigned long long t0 = __rdtsc();
            spin_lock(&lock_word);
            spin_ticks += __rdtsc() - t0;
        } else {
            spin_lock(&lock_word);
        }
        for (int k = 0; k < 8; k++) shared_state[k] += mine + (unsigned long)k; /* the critical section */
        for (int k = 0; k < 40; k++) shared_state[k & 7] ^= shared_state[(k + 1) & 7] >> 1;
        spin_unlock(&lock_word);
    }
    if (measure_spin) {
        char line[96];
        int n = snprintf(line, sizeof line, "truth-spin tid=%ld spin_lock_ns=%.0f\n", (long)syscall(SYS_gettid),
                         (double)spin_ticks * ns_per_tick);
        if (write(2, line, (size_t)n) < 0) return NULL;
    }
    truth_end("worker");
    return (void *)mine;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    iterations = arg_or(argc, argv, 2, 6000000) / threads;
    measure_spin = getenv("CAUSE_TRUTH") != NULL;
    if (measure_spin) { /* TSC ticks per ns, over 20 ms */
        unsigned long long c0 = truth_clock(CLOCK_MONOTONIC), t0 = __rdtsc();
        while (truth_clock(CLOCK_MONOTONIC) - c0 < 20000000ull) {}
        ns_per_tick = (double)(truth_clock(CLOCK_MONOTONIC) - c0) / (double)(__rdtsc() - t0);
    }
    pthread_t t[256];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("state %lu\n", shared_state[0]);
    truth_end("main");
    return 0;
}
