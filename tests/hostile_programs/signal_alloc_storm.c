/* A storm of signals whose handler allocates and frees (not async-signal-safe, but common; the
 * interrupted code never allocates here, so it cannot deadlock without stallscope): a thread
 * sends SIGUSR1 to the process 3,000 times while two threads compute; prints "done" and whether
 * every handler's allocation succeeded. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t failed, handled;
static volatile int stop;

static void handler(int sig) {
    (void)sig;
    char *p = malloc(64 + (size_t)(handled % 512));
    if (!p) failed = 1;
    else {
        memset(p, 1, 64);
        free(p);
    }
    handled++;
}

static void *compute(void *arg) {
    volatile unsigned long x = 0;
    while (!stop) x += 3;
    return arg;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, compute, NULL);
    for (int i = 0; i < 3000; i++) {
        kill(getpid(), SIGUSR1);
        if (i % 100 == 0) usleep(100);
    }
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("done, %s\n", failed ? "an allocation failed" : "every allocation succeeded");
    return 0;
}
