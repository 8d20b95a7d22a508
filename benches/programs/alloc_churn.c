/* Overhead case (a): two threads, each doing 5 million malloc/free pairs of 8..128 bytes (or the
 * number given as the argument: benches/overhead.sh's `alloclong`), in batches of 64 (64 mallocs,
 * then the 64 frees). Prints a checksum so the work cannot be elided.
 * Built with -DHOOK_AB it has no main: benches/programs/hook_ab.c calls churn_pairs through
 * allocator functions it switches between (benches/hook_inprocess.sh). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HOOK_AB
#include "hook_ab.h"
#endif

#define PER_THREAD 5000000
#define BATCH 64

/* `pairs` malloc/free pairs (a multiple of BATCH) from the random sequence at *seed; returns a
 * checksum of what was written into the blocks. */
static uint64_t churn_pairs(uint64_t *seed_io, int pairs) {
    uint64_t seed = *seed_io, sum = 0;
    unsigned char *blocks[BATCH];
    for (int done = 0; done < pairs; done += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t size = 8 + (size_t)((seed >> 33) % 121); /* 8..128 */
            blocks[i] = malloc(size);
            blocks[i][0] = (unsigned char)i;
            blocks[i][size - 1] = (unsigned char)size;
        }
        for (int i = 0; i < BATCH; i++) {
            sum += blocks[i][0];
            free(blocks[i]);
        }
    }
    *seed_io = seed;
    return sum;
}

#ifdef HOOK_AB
uint64_t hook_ab_churn(uint32_t batches) {
    uint64_t seed = 1;
    return churn_pairs(&seed, (int)batches * BATCH);
}
#else
static int pairs = PER_THREAD;

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    return (void *)(uintptr_t)churn_pairs(&seed, pairs);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        long n = atol(argv[1]);
        if (n < BATCH || n > 1000000000L) return 2;
        pairs = (int)(n / BATCH * BATCH);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0) return 1;
    uint64_t total = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uint64_t)(uintptr_t)r;
    }
    printf("%llu\n", (unsigned long long)total);
    return 0;
}
#endif
