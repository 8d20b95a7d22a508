/* The program behind tests/golden/sample.prof and the diff tests: two threads that build records
 * (small strings) and buffers (4 KiB), and add to a shared counter under a mutex, inside a
 * phase. `work RECORDS BUFFERS`: the diff test runs it with different counts. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stallscope.h"

enum { THREADS = 2 };
static long records = 20000, buffers = 2000;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total;

__attribute__((noinline)) static char *make_record(long i) {
    char line[48];
    snprintf(line, sizeof line, "record %ld", i);
    char *s = malloc(strlen(line) + 1);
    strcpy(s, line);
    return s;
}

__attribute__((noinline)) static void *make_buffer(long i) {
    char *b = malloc(4096);
    memset(b, (int)i, 4096);
    return b;
}

static void *worker(void *arg) {
    (void)arg;
    stallscope_phase_begin("build");
    for (long i = 0; i < records; i++) {
        char *s = make_record(i);
        pthread_mutex_lock(&lock);
        total += strlen(s);
        pthread_mutex_unlock(&lock);
        free(s);
    }
    for (long i = 0; i < buffers; i++) {
        unsigned char *b = make_buffer(i);
        pthread_mutex_lock(&lock);
        total += b[100];
        pthread_mutex_unlock(&lock);
        free(b);
    }
    stallscope_phase_end();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) records = atol(argv[1]);
    if (argc > 2) buffers = atol(argv[2]);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    stallscope_heap_snapshot("done");
    printf("%lu\n", total);
    return 0;
}
