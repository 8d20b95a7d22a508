/* Two workers that block every signal (as xz's do) and compute for about half a second each.
 * Prints a checksum. (Such threads are sampled: the report must not read
 * "parallel efficiency 0.0%" for two busy workers.) */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    double seconds = *(double *)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    volatile unsigned long x = 0;
    double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 100000; i++) x += (unsigned long)i * i;
    return (void *)(x & 1);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 0.5;
    pthread_t a, b;
    pthread_create(&a, NULL, worker, &seconds);
    pthread_create(&b, NULL, worker, &seconds);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("workers done\n");
    return 0;
}
