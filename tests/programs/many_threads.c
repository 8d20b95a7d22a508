/* Creates and joins 500 short-lived threads, in batches of 25 created together then joined in
 * order. Each thread makes exactly 100 malloc(40) and 100 free. With the argument "empty" the same
 * threads are made but allocate nothing (the C runtime's own allocations for thread creation). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 500
#define BATCH 25
#define PER_THREAD 100

static volatile unsigned long sink;
static int empty;

static void *worker(void *arg) {
    (void)arg;
    if (empty) return NULL;
    void *blocks[PER_THREAD];
    for (int i = 0; i < PER_THREAD; i++) {
        blocks[i] = malloc(40);
        memset(blocks[i], i, 40);
    }
    for (int i = 0; i < PER_THREAD; i++) {
        sink += ((volatile unsigned char *)blocks[i])[39];
        free(blocks[i]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    empty = argc > 1 && strcmp(argv[1], "empty") == 0;
    pthread_t threads[BATCH];
    for (int done = 0; done < THREADS; done += BATCH) {
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&threads[i], NULL, worker, NULL) != 0) return 10;
        for (int i = 0; i < BATCH; i++) pthread_join(threads[i], NULL);
    }
    return 0;
}
