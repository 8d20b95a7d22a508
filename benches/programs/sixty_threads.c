/* benches/report_speed.sh's long profile: 60 threads working together for SECONDS (default 40)
 * on however few CPUs there are: each loops computing, allocating and freeing blocks, and taking
 * one of 4 shared mutexes now and then. Prints a checksum. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define THREADS 60
#define LOCKS 4

static pthread_mutex_t locks[LOCKS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                       PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static uint64_t shared[LOCKS];
static double seconds = 40;
static struct timespec start;

static double elapsed(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
}

static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    uint64_t x = id + 1, sum = 0;
    while (elapsed() < seconds) {
        for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t size = 16 + (size_t)(x >> 56);
        unsigned char *block = malloc(size);
        memset(block, (int)x, size);
        sum += block[size - 1];
        free(block);
        if ((x >> 60) == 0) {
            pthread_mutex_t *lock = &locks[id % LOCKS];
            pthread_mutex_lock(lock);
            shared[id % LOCKS] += sum;
            pthread_mutex_unlock(lock);
        }
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    clock_gettime(CLOCK_MONOTONIC, &start);
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 1;
    uint64_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uintptr_t)r;
    }
    for (int i = 0; i < LOCKS; i++) total += shared[i];
    printf("%llu\n", (unsigned long long)total);
    return 0;
}
