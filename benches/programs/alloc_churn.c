/* Overhead case (a): two threads, each doing 5 million malloc/free pairs of 8..128 bytes, in
 * batches of 64 (64 mallocs, then the 64 frees). Prints a checksum so the work cannot be elided. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PER_THREAD 5000000
#define BATCH 64

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg, sum = 0;
    unsigned char *blocks[BATCH];
    for (int done = 0; done < PER_THREAD; done += BATCH) {
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
    return (void *)(uintptr_t)sum;
}

int main(void) {
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
