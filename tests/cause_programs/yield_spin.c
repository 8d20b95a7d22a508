/* A spin-wait with sched_yield: consumers poll a single-slot mailbox and call sched_yield()
 * while it is empty; one producer computes each item (the slow part) and posts it.
 *
 * Demonstrates: spinning in a sched_yield loop. The consumers burn CPU (system time: every
 * sched_yield is a system call) waiting for work the producer has not made yet; with more
 * consumers than spare CPUs they also take CPU time from the producer, so adding consumers makes
 * the program slower.
 * Correct diagnosis: spinning (sched_yield loop) in wait_for_item (yield_spin.c) called from
 * consumer, most of each consumer's time; the producer (produce, the real work) is the critical
 * path. Remedy: block on a condition variable / futex / semaphore instead of yielding. NOT
 * "compute", NOT "I/O" (sched_yield is a system call but waits for nothing).
 * Usage: yield_spin [consumers=2] [items=4000] (one producer thread besides the consumers) */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include "truth.h"

static atomic_long mailbox = -1; /* -1: empty; -2: no more items */
static atomic_long consumed;
static long items;

__attribute__((noinline)) static double produce(long i) {
    double x = (double)i;
    for (int k = 0; k < 60000; k++) x = x * 0.999999 + 1.0 / (1.0 + (double)k);
    return x;
}

/* Takes the next item, yielding the CPU while there is none. */
__attribute__((noinline)) static long wait_for_item(void) {
    for (;;) {
        long v = atomic_load(&mailbox);
        if (v == -2) return -2;
        if (v >= 0 && atomic_compare_exchange_strong(&mailbox, &v, -1)) return v;
        sched_yield();
    }
}

static void *producer(void *arg) {
    (void)arg;
    truth_start();
    double sink = 0;
    for (long i = 0; i < items; i++) {
        sink += produce(i);
        long empty = -1;
        while (!atomic_compare_exchange_weak(&mailbox, &empty, i)) { /* the last one not taken yet */
            empty = -1;
            sched_yield();
        }
    }
    long empty = -1;
    while (!atomic_compare_exchange_weak(&mailbox, &empty, -2)) {
        empty = -1;
        sched_yield();
    }
    truth_end("producer");
    return (void *)(long)sink;
}

static void *consumer(void *arg) {
    (void)arg;
    truth_start();
    long sum = 0;
    for (long v; (v = wait_for_item()) != -2;) {
        sum += v;
        atomic_fetch_add(&consumed, 1);
    }
    truth_end("consumer");
    return (void *)sum;
}

int main(int argc, char **argv) {
    truth_start();
    int consumers = (int)arg_or(argc, argv, 1, 2);
    items = arg_or(argc, argv, 2, 4000);
    if (consumers > 64) consumers = 64;
    pthread_t p, c[64];
    pthread_create(&p, NULL, producer, NULL);
    for (int i = 0; i < consumers; i++) pthread_create(&c[i], NULL, consumer, NULL);
    pthread_join(p, NULL);
    for (int i = 0; i < consumers; i++) pthread_join(c[i], NULL);
    printf("consumed %ld\n", atomic_load(&consumed));
    truth_end("main");
    return 0;
}
