/* A single-threaded program that reads glibc's `__libc_single_threaded` (as libstdc++ does to
 * choose plain or atomic reference counts): at start, after a second in which the profiler's
 * periodic flush runs, in a fork child, and after creating a thread of its own. In between it
 * loads libm with dlopen and computes in it, so that CPU samples land in an object loaded while
 * glibc still believed the process single-threaded (the flusher scans the loaded objects only at
 * the end then: preload/single.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *nothing(void *arg) { return arg; }

int main(void) {
    printf("start %d\n", __libc_single_threaded);
    fflush(stdout);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    void *volatile keep;
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&m);
        keep = malloc((size_t)(16 + i % 200));
        free(keep);
        pthread_mutex_unlock(&m);
    }
    usleep(1200000); /* a periodic flush (every second) runs meanwhile */
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    double (*cosine)(double) = libm ? (double (*)(double))dlsym(libm, "cos") : NULL;
    if (!cosine) return 2;
    volatile double sum = 0;
    for (double end = now() + 0.3; now() < end;)
        for (int i = 0; i < 10000; i++) sum += cosine(i * 0.001);
    printf("after dlopen %d\n", __libc_single_threaded);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 1000; i++) {
            keep = malloc(64);
            free(keep);
        }
        printf("child %d\n", __libc_single_threaded);
        exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) != 0) return 3;
    pthread_join(t, NULL);
    printf("after a thread %d\n", __libc_single_threaded);
    return 0;
}
