/* Signals sent to the process while its main thread waits in sigsuspend and two workers compute:
 * the kernel delivers a process-directed signal to the main thread when it can take it, so every
 * one of them must be handled there. Prints where each was handled. (With
 * sampling on, such signals must still reach the main thread: stress-ng waits for its SIGALRM
 * there.) A separate process sends them, so that the sender is no thread of ours. Prints how
 * many were handled by another thread than main (0 without the profiler). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t on_main, on_other, stop;
static pid_t main_tid;

static void on_usr1(int sig) {
    (void)sig;
    if ((pid_t)syscall(SYS_gettid) == main_tid) on_main++;
    else on_other++;
}

static void *worker(void *arg) {
    (void)arg;
    volatile unsigned long x = 0;
    while (!stop)
        for (int i = 0; i < 10000; i++) x += i;
    return NULL;
}

int main(int argc, char **argv) {
    int count = argc > 1 ? atoi(argv[1]) : 40;
    main_tid = (pid_t)syscall(SYS_gettid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    /* More busy workers than most machines have spare cores: when a signal wakes the main
     * thread, it may wait for a CPU while the workers run. */
    pthread_t workers[6];
    for (int i = 0; i < 6; i++) pthread_create(&workers[i], NULL, worker, NULL);
    pid_t parent = getpid();
    pid_t sender = fork();
    if (sender == 0) {
        for (int i = 0; i < count; i++) {
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
            kill(parent, SIGUSR1);
        }
        _exit(0);
    }
    /* Main sleeps until the sender is done (its sleeps are cut short by the signals). */
    for (;;) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (waitpid(sender, NULL, WNOHANG) == sender) break;
    }
    struct timespec last = {0, 100 * 1000 * 1000};
    nanosleep(&last, NULL);
    stop = 1;
    for (int i = 0; i < 6; i++) pthread_join(workers[i], NULL);
    /* Signals sent while one was still pending merge into it: only where they went is compared. */
    printf("signals handled by other threads than main: %d\n", (int)on_other);
    return 0;
}
