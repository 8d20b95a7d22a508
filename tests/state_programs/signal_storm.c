/* Many signals between threads, and sleeps that signals interrupt: the program's own results
 * must not change under sampling. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t received;
static void on_usr1(int sig) { received++; }

static void *target_main(void *arg) {
    volatile double x = 1;
    for (long i = 0; i < 60000000; i++) x = x * 1.0000001 + 1e-9;
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, target_main, NULL);
    int sent = 0;
    for (int i = 0; i < 2000; i++) {
        if (pthread_kill(t, SIGUSR1) == 0) sent++;
        struct timespec ts = {0, 20000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    }
    pthread_join(t, NULL);
    /* A sleep nobody interrupts: without a handler of ours it must never return early. */
    struct timespec ts = {0, 50000000}, rem = {0, 0};
    int rc = nanosleep(&ts, &rem);
    printf("sent %d, sleep rc %d\n", sent, rc);
    printf("received some: %s\n", received > 0 ? "yes" : "no");
    return 0;
}
