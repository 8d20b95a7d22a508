/* A small service for the push tests: four threads, each round burning CPU in spin_hot, taking a
 * shared mutex that hold_lock keeps while it works (the others wait on it), and allocating blocks
 * in make_blocks, then sleeping 20 ms, so that it runs a few seconds whatever the machine's
 * speed with fixed work (and so fixed output). Prints "ready" once its threads run, a checksum
 * at the end, and exits with status 3. argv[1]: rounds (default 150). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long total;
static int rounds = 150;

__attribute__((noinline)) static unsigned long long spin_hot(unsigned long long seed) {
    volatile unsigned long long x = seed;
    for (int i = 0; i < 3000000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

__attribute__((noinline)) static void hold_lock(unsigned long long id) {
    pthread_mutex_lock(&shared);
    volatile unsigned long long x = id;
    for (int i = 0; i < 300000; i++) x = x * 3 + 1;
    total += x & 1;
    pthread_mutex_unlock(&shared);
}

__attribute__((noinline)) static unsigned long long make_blocks(int n) {
    unsigned long long sum = 0;
    for (int i = 0; i < n; i++) {
        size_t size = 32 + (size_t)(i % 500);
        unsigned char *p = malloc(size);
        memset(p, i & 0xff, size);
        sum += p[size - 1];
        free(p);
    }
    return sum;
}

static void *worker(void *arg) {
    unsigned long long id = (unsigned long long)(size_t)arg, local = 0;
    for (int r = 0; r < rounds; r++) {
        local += spin_hot(id + (unsigned long long)r) & 1;
        for (int k = 0; k < 4; k++) hold_lock(id);
        local += make_blocks(2000);
        usleep(20000);
    }
    pthread_mutex_lock(&shared);
    total += local;
    pthread_mutex_unlock(&shared);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atoi(argv[1]);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("total %llu\n", total);
    return 3;
}
