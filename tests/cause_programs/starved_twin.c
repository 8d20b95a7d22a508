/* Clean program under other load: two workers with equal work, pinned to CPUs 0 and 1, while a
 * child process spins on CPU 1. The second worker gets about half of its CPU and ends about twice
 * as late, running alone at the end.
 *
 * Demonstrates: a lone thread at the end of a parallel part that is not the program's serial
 * section nor its imbalance: the workers did the same work, the late one waited for a CPU (its
 * kernel run delay) while the other load ran.
 * Correct diagnosis: NO serial-section and NO load-imbalance finding; the late worker's wait for
 * a CPU shows as runnable (other load on the machine).
 * Usage: starved_twin [threads: ignored, always 2] [total work=4000] */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "truth.h"

static long per_thread;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

__attribute__((noinline)) static double integrate(long begin, long end) {
    double sum = 0;
    for (long i = begin; i < end; i++)
        for (int k = 0; k < 100000; k++) sum += 1.0 / (1.0 + (double)(i * 100000 + k) * 1e-9);
    return sum;
}

static void *worker(void *arg) {
    long id = (long)arg;
    pin((int)id);
    truth_start();
    double r = integrate(id * per_thread, (id + 1) * per_thread);
    truth_end("worker");
    return (void *)(long)r;
}

int main(int argc, char **argv) {
    truth_start();
    per_thread = arg_or(argc, argv, 2, 4000) / 2;
    int ready[2];
    if (pipe(ready) != 0) return 1;
    pid_t hog = fork();
    if (hog == 0) { /* the other load: spins on CPU 1 until killed */
        pin(1);
        (void)write(ready[1], "x", 1);
        for (volatile unsigned long n = 0;; n++) {
        }
    }
    char c;
    if (hog < 0 || read(ready[0], &c, 1) != 1) return 1;
    pthread_t t[2];
    long total = 0;
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    kill(hog, SIGKILL);
    waitpid(hog, NULL, 0);
    printf("%ld\n", total);
    truth_end("main");
    return 0;
}
