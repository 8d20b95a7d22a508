// 16 threads on however few CPUs, each alternating computation and bursts of small and
// mid-size allocations: on 2 CPUs each thread waits for a CPU most of its life, also inside its
// allocator calls, whose timed durations then add up to more than the threads' CPU time.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 16

static void *worker(void *arg) {
    unsigned long x = (unsigned long)(size_t)arg + 1;
    for (int round = 0; round < 150; round++) {
        for (int i = 0; i < 200000; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
        void *blocks[256];
        for (int i = 0; i < 256; i++) {
            blocks[i] = malloc(32 + (x >> 50) % 4000);
            x = x * 3 + (unsigned long)i;
            memset(blocks[i], 1, 32);
        }
        for (int i = 0; i < 256; i++) free(blocks[i]);
    }
    return (void *)(size_t)x;
}

int main(void) {
    pthread_t t[THREADS];
    unsigned long all = 0;
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        all ^= (unsigned long)(size_t)r;
    }
    printf("%lu\n", all);
    return 0;
}
