/* The rare slow allocation call, for benches/strata_accuracy.sh: a request that makes glibc
 * consolidate millions of free chunks in the fast bins costs milliseconds, more than all the other
 * calls of the program together. Each of ROUNDS rounds allocates 2 million 32-byte blocks (with
 * calloc), frees them, and goes on with 2 KiB malloc/free pairs, the first of which consolidates
 * (the slow call): malloc's time is that of the slow calls and of 400,000 ordinary ones a round.
 *   consolidate own [ROUNDS=5]     the main thread frees the blocks itself
 *   consolidate other [ROUNDS=5]   another thread frees them (into the main thread's arena), so
 *                                  the main thread's own frees say nothing of the fast bins
 *   consolidate mixed [ROUNDS=5]   no slow call: blocks of 16 B to 16 KiB replaced at random
 * Prints a checksum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 2000000

static void **blocks;
static volatile uint64_t sink;

static void steady(int pairs) { /* the ordinary calls around the slow one */
    for (int i = 0; i < pairs; i++) {
        char *p = malloc(2048 + (size_t)(i % 64));
        p[0] = (char)i;
        sink += (uint64_t)p[0];
        free(p);
    }
}

static void *free_all(void *arg) {
    (void)arg;
    for (int i = 0; i < BLOCKS; i++) free(blocks[i]);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "own";
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    blocks = malloc(BLOCKS * sizeof *blocks);
    if (!blocks) return 1;
    if (strcmp(mode, "mixed") == 0) {
        uint64_t x = 12345;
        char *slot[1024] = {0};
        for (long i = 0; i < 2000000L * rounds; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t k = (uint32_t)(x >> 54);
            free(slot[k]);
            slot[k] = malloc((size_t)16 << ((x >> 20) % 11));
            slot[k][0] = 1;
        }
        for (int k = 0; k < 1024; k++) free(slot[k]);
        printf("mixed %d\n", rounds);
        return 0;
    }
    int other = strcmp(mode, "other") == 0;
    for (int r = 0; r < rounds; r++) {
        steady(200000);
        for (int i = 0; i < BLOCKS; i++) blocks[i] = calloc(1, 32); /* not malloc: its time is the
                                                                     steady calls' and the slow one's */
        if (other) {
            pthread_t t;
            pthread_create(&t, NULL, free_all, NULL);
            pthread_join(t, NULL);
        } else {
            free_all(NULL);
        }
        steady(200000); /* the first request consolidates */
    }
    free(blocks);
    printf("%s %d %llu\n", mode, rounds, (unsigned long long)sink);
    return 0;
}
