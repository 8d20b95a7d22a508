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
 * contention" only.
 * Usage: spinlock [threads=2] [total iterations=6000000, split evenly between the threads] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "truth.h"

static atomic_int lock_word;
static volatile unsigned long shared_state[8];
static long iterations;

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
    for (long i = 0; i < iterations; i++) {
        for (int k = 0; k < 20; k++) mine += (x = x * 6364136223846793005ul + 1442695040888963407ul) >> 60;
        spin_lock(&lock_word);
        for (int k = 0; k < 8; k++) shared_state[k] += mine + (unsigned long)k; /* the critical section */
        for (int k = 0; k < 40; k++) shared_state[k & 7] ^= shared_state[(k + 1) & 7] >> 1;
        spin_unlock(&lock_word);
    }
    truth_end("worker");
    return (void *)mine;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    iterations = arg_or(argc, argv, 2, 6000000) / threads;
    pthread_t t[256];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("state %lu\n", shared_state[0]);
    truth_end("main");
    return 0;
}
