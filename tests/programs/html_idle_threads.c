// A server's shape: three threads wait for work that never comes while the main thread computes
// for 150 ms of its CPU time, then releases them. Their waiting (450 ms) outweighs the CPU time,
// yet it stalls nothing: the page must open on the CPU time.
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;

static void *idle_worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static double serve(void) {
    double x = 1, start = cpu_seconds();
    while (cpu_seconds() - start < 0.15)
        for (int i = 0; i < 10000; i++) x = x * 1.0000001 + 0.5 / (x + 3);
    return x;
}

int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, idle_worker, NULL);
    double x = serve();
    pthread_mutex_lock(&mu);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("%g\n", x);
    return 0;
}
