/* The built-in demo program for `stallscope demo`: worker threads that format records with
 * snprintf, keep each one as a small heap string, and count them under one shared mutex.
 * Small allocations and a contended lock: the two costs stallscope is built to show. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 4, RECORDS = 200000, BATCH = 256 };

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total_bytes;

static void *worker(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    char *batch[BATCH];
    for (int i = 0; i < RECORDS; i++) {
        char line[64];
        seed = seed * 1103515245u + 12345u;
        int n = snprintf(line, sizeof line, "id=%d v=%u", i, seed >> 16);
        batch[i % BATCH] = strdup(line); /* one small allocation per record */
        pthread_mutex_lock(&total_lock); /* one shared counter: every thread takes this lock */
        total_bytes += (unsigned long)n;
        pthread_mutex_unlock(&total_lock);
        if (i % BATCH == BATCH - 1)
            for (int k = 0; k < BATCH; k++) free(batch[k]);
    }
    return NULL;
}

int main(void) {
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, worker, (void *)(size_t)(i + 1));
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    printf("formatted %lu bytes in %d threads\n", total_bytes, THREADS);
    return 0;
}
