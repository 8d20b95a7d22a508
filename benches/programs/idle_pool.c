/* A pool of threads that sleep: argv[1] threads (default 16) each sleep argv[2] seconds (default
 * 3), and main joins them. Nothing runs, so all that happens under stallscope is its flusher's
 * looks at threads that are not running (benches/flusher_cost.sh). With argv[3] `busy` each
 * thread computes for that long instead: the flusher's looks at threads that run throughout. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 3;
static int busy;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg) {
    if (busy) {
        volatile double x = 1;
        for (double end = now_s() + seconds; now_s() < end;)
            for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
        return arg;
    }
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    return arg;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 16;
    if (argc > 2) seconds = atof(argv[2]);
    busy = argc > 3 && strcmp(argv[3], "busy") == 0;
    if (n < 1 || n > 4096) return 2;
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t) return 1;
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, sleeper, NULL) != 0) return 1;
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    free(t);
    return 0;
}
