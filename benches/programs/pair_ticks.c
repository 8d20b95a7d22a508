/* The time of one call pair, in TSC ticks: rwlock rdlock/unlock, mutex lock/unlock or malloc/free
 * of 64 bytes, 400 batches of 20000 pairs on one thread, the fastest batch reported (the minimum
 * leaves out what other work on the machine adds).
 *   pair_ticks rwlock|mutex|malloc */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

static inline uint64_t ticks(void) {
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static const char *mode;

static void *loop(void *arg) {
    (void)arg;
    uint64_t best = UINT64_MAX;
    for (int b = 0; b < 400; b++) {
        uint64_t t0 = ticks();
        for (int i = 0; i < 20000; i++) {
            if (mode[0] == 'r') {
                pthread_rwlock_rdlock(&rwlock);
                sink++;
                pthread_rwlock_unlock(&rwlock);
            } else if (mode[0] == 'm' && mode[1] == 'u') {
                pthread_mutex_lock(&mutex);
                sink++;
                pthread_mutex_unlock(&mutex);
            } else {
                void *p = malloc(64);
                sink += (long)(uintptr_t)p;
                free(p);
            }
        }
        uint64_t d = ticks() - t0;
        if (d < best) best = d;
    }
    printf("%s %.2f ticks/pair\n", mode, best / 20000.0);
    return NULL;
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "rwlock";
    if (strcmp(mode, "rwlock") && strcmp(mode, "mutex") && strcmp(mode, "malloc")) return 2;
    /* On a thread of its own, as in the workloads (the hooks' paths are those of a created thread). */
    pthread_t t;
    if (pthread_create(&t, NULL, loop, NULL) != 0) return 1;
    pthread_join(t, NULL);
    return 0;
}
