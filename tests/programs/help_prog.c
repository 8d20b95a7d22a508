// The program the examples of `stallscope COMMAND --help` and the README run: N threads (its
// first argument, 2 when it is not a number) that format records and count them under one mutex,
// for S seconds of wall time when a second argument gives S (a process to attach to), else for
// a fixed count of records.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total;
static double seconds;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    (void)arg;
    double end = now() + seconds;
    for (long i = 0; seconds > 0 ? now() < end : i < 200000; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "id=%ld", i);
        pthread_mutex_lock(&total_lock);
        total += (unsigned long)n;
        pthread_mutex_unlock(&total_lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    if (threads < 1 || threads > 64) threads = 2;
    seconds = argc > 2 ? atof(argv[2]) : 0;
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%lu\n", total);
    return 0;
}
