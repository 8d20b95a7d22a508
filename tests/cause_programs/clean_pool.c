/* Clean case: a balanced pool. Work items of uneven sizes are handed out through one atomic
 * index (fetch_add), so every thread stays busy until the items run out.
 *
 * Demonstrates: nothing wrong. The atomic index is touched once per item (items take ~0.1-1 ms),
 * so it is not contended; the threads finish within one item of each other.
 * Correct diagnosis: compute ~100% of each worker's life (less runnable time on a loaded
 * machine), no spinning, no atomic contention, no imbalance beyond the last item; NO finding at
 * medium or high.
 * Usage: clean_pool [threads=2] [items=4000] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include "truth.h"

static atomic_long next_item;
static long items;

__attribute__((noinline)) static double process_item(long i) {
    long size = 20000 + (i * 7919 % 13) * 20000; /* 20k..260k steps: uneven on purpose */
    double x = (double)i;
    for (long k = 0; k < size; k++) x = x * 0.99999 + 1e-6;
    return x;
}

static void *worker(void *arg) {
    (void)arg;
    truth_start();
    double sum = 0;
    for (long i; (i = atomic_fetch_add_explicit(&next_item, 1, memory_order_relaxed)) < items;)
        sum += process_item(i);
    truth_end("worker");
    return (void *)(long)sum;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    items = arg_or(argc, argv, 2, 4000);
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
