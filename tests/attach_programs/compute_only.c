/* A thread that only computes (no call the interposer hooks: no allocation, no lock) in short
 * bursts between sleeps, for argv[1] rounds of about 10 ms; main waits for it in pthread_join
 * from the start. Prints "ready" and its tid, then the result. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int rounds = 400;
static volatile pid_t worker_tid;

static void *compute(void *arg) {
    (void)arg;
    worker_tid = gettid();
    unsigned long long x = 1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2000000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
        struct timespec ts = {0, 8000000};
        nanosleep(&ts, NULL);
    }
    return (void *)(size_t)(x & 0xff);
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atoi(argv[1]);
    pthread_t t;
    pthread_create(&t, NULL, compute, NULL);
    while (!worker_tid) usleep(1000);
    printf("ready\n%d\n", (int)worker_tid);
    fflush(stdout);
    void *ret;
    pthread_join(t, &ret);
    printf("result %zu\n", (size_t)ret);
    return 0;
}
