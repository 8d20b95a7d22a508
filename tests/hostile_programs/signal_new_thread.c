/* A signal delivered to a thread at once after its creation, whose handler allocates: the handler
 * may run before the new thread has started its own code. Run many times; exits 0 and prints the
 * number of signals handled. (The interposer must give such a thread one record and one
 * CPU timer: a second timer's SIGPROF would kill the process.) */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t handled;

static void on_usr1(int sig) {
    (void)sig;
    free(malloc(64));
    handled++;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    int before = (int)(long)arg;
    /* Burn CPU for a while so that per-thread CPU timers fire, and until the signal was handled
     * (at most 2 s): a thread that ended first would drop it, pending, at its exit (on a busy
     * machine main can be kept off its CPU past the 30 ms; the plain run then printed 29 of 30). */
    volatile unsigned long x = 0;
    double start = now();
    while (now() < start + 0.03 || (handled == before && now() < start + 2.0))
        for (int i = 0; i < 10000; i++) x += i;
    return NULL;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    for (int r = 0; r < rounds; r++) {
        pthread_t th;
        if (pthread_create(&th, NULL, worker, (void *)(long)handled) != 0) return 2;
        pthread_kill(th, SIGUSR1);
        pthread_join(th, NULL);
    }
    printf("handled %d of %d\n", (int)handled, rounds);
    return 0;
}
