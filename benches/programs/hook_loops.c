/* Tight loops of one hooked call each, for counting the instructions a hook adds
 * (benches/hook_cost.sh runs it under callgrind with and without the interposer).
 *   hook_loops small N     N malloc/free pairs of 16..128 bytes, in batches of 64
 *   hook_loops mid N       N malloc/free pairs of 1..4 KiB, in batches of 64
 *   hook_loops mutex N     N lock/unlock pairs of one mutex, one thread
 *   hook_loops rwlock N    N rdlock/unlock pairs of one rwlock, one thread
 *   hook_loops spin N      N lock/unlock pairs of one spinlock, one thread
 * Prints a checksum so the work cannot be elided. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64

static uint64_t allocs(long n, size_t lo, size_t hi) {
    unsigned char *blocks[BATCH];
    uint64_t seed = 7, sum = 0;
    for (long done = 0; done < n; done += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t size = lo + (size_t)((seed >> 33) % (hi - lo + 1));
            blocks[i] = malloc(size);
            blocks[i][0] = (unsigned char)i;
        }
        for (int i = 0; i < BATCH; i++) {
            sum += blocks[i][0];
            free(blocks[i]);
        }
    }
    return sum;
}

static volatile uint64_t shared;

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: hook_loops small|mid|mutex|rwlock|spin N\n");
        return 2;
    }
    long n = atol(argv[2]);
    uint64_t sum = 0;
    if (strcmp(argv[1], "small") == 0) {
        sum = allocs(n, 16, 128);
    } else if (strcmp(argv[1], "mid") == 0) {
        sum = allocs(n, 1024, 4096);
    } else if (strcmp(argv[1], "mutex") == 0) {
        static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            shared++;
            pthread_mutex_unlock(&m);
        }
        sum = shared;
    } else if (strcmp(argv[1], "rwlock") == 0) {
        static pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
        for (long i = 0; i < n; i++) {
            pthread_rwlock_rdlock(&l);
            sum += shared;
            pthread_rwlock_unlock(&l);
        }
    } else if (strcmp(argv[1], "spin") == 0) {
        static pthread_spinlock_t s;
        pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
        for (long i = 0; i < n; i++) {
            pthread_spin_lock(&s);
            shared++;
            pthread_spin_unlock(&s);
        }
        sum = shared;
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
