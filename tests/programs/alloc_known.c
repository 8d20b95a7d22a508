/* Known allocations in two threads. Each worker makes exactly:
 *   10000 malloc(24), 5000 calloc(4, 8), 3000 realloc(p, 100) of a malloc(16) pointer,
 *   2000 posix_memalign(64, 48), 1000 aligned_alloc(64, 128), and the matching frees.
 * So per worker: malloc 13000 (10000 + the 3000 realloc sources), calloc 5000, realloc 3000,
 * aligned 3000, free 10000 + 5000 + 3000 + 2000 + 1000 = 21000.
 * With the argument "empty" the same threads are created and joined but allocate nothing, which
 * measures what the C runtime itself allocates (thread creation does). The workers name
 * themselves "alloc-a" and "alloc-b" (in both modes). Prints nothing. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;
static int empty;

static void touch(void *p, size_t n) {
    memset(p, 0x5a, n);
    sink += ((volatile unsigned char *)p)[n - 1];
}

static void *worker(void *arg) {
    pthread_setname_np(pthread_self(), (const char *)arg);
    if (empty) return NULL;
    for (int i = 0; i < 10000; i++) {
        void *p = malloc(24);
        touch(p, 24);
        free(p);
    }
    for (int i = 0; i < 5000; i++) {
        void *p = calloc(4, 8);
        touch(p, 32);
        free(p);
    }
    for (int i = 0; i < 3000; i++) {
        void *p = malloc(16);
        touch(p, 16);
        void *q = realloc(p, 100);
        touch(q, 100);
        free(q);
    }
    for (int i = 0; i < 2000; i++) {
        void *p = NULL;
        if (posix_memalign(&p, 64, 48) != 0) abort();
        touch(p, 48);
        free(p);
    }
    for (int i = 0; i < 1000; i++) {
        void *p = aligned_alloc(64, 128);
        touch(p, 128);
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    empty = argc > 1 && strcmp(argv[1], "empty") == 0;
    pthread_t a, b;
    if (pthread_create(&a, NULL, worker, "alloc-a") != 0) return 10;
    if (pthread_create(&b, NULL, worker, "alloc-b") != 0) return 11;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
