/* Threads allocating and freeing 1-4 KiB blocks with glibc's arenas capped at one
 * (mallopt(M_ARENA_MAX, 1), as services do to save memory; also MALLOC_ARENA_MAX=1).
 *
 * Demonstrates: malloc's arena lock. Blocks of 1-4 KiB are above glibc's tcache limit (1032
 * bytes), so nearly every malloc and free takes the arena's mutex; with one arena all threads
 * share it and 2 threads are several times slower than 1.
 * Correct diagnosis: waiting for malloc's arena lock (glibc-internal lock inside malloc/free:
 * __lll_lock_wait_private / the lock cmpxchg in _int_free/arena_get) at churn (arena_lock.c), a
 * large share of each thread's time at 2 threads; named as "the allocator's arena lock" with the
 * remedy: remove the M_ARENA_MAX cap (or MALLOC_ARENA_MAX), or use a thread-caching allocator
 * (jemalloc, mimalloc, tcmalloc), or pool the blocks. NOT just "time in the allocator 100%" plus
 * two anonymous "contention on a lock inside the C library" in futex_wait / lll_lock_wake_private.
 * Usage: arena_lock [threads=2] [total operations=12000000] [arena max=1 (0: leave glibc's default)] */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "truth.h"

#define LIVE 64
static long operations;

__attribute__((noinline)) static unsigned long churn(unsigned long seed) {
    void *live[LIVE] = {0};
    unsigned long s = seed * 2654435761ul + 1, sum = 0;
    for (long i = 0; i < operations; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int slot = (int)(s % LIVE);
        free(live[slot]);
        size_t size = 1024 + (size_t)((s >> 8) % 3072);
        char *p = malloc(size);
        p[0] = (char)i, p[size - 1] = (char)s;
        sum += (unsigned char)p[0];
        live[slot] = p;
    }
    for (int i = 0; i < LIVE; i++) free(live[i]);
    return sum;
}

static void *worker(void *arg) {
    truth_start();
    unsigned long r = churn((unsigned long)arg + 1);
    truth_end("worker");
    return (void *)r;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    operations = arg_or(argc, argv, 2, 12000000) / threads;
    long arena_max = argc > 3 ? strtol(argv[3], NULL, 10) : 1;
    if (arena_max > 0) mallopt(M_ARENA_MAX, (int)arena_max);
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
