/* A forking server in small, for the push tests: the parent starts two worker processes (fork,
 * no exec) that each burn CPU in worker_spin, allocate and take a lock, round after round, for
 * about argv[1] seconds (default 2.5), then exit; the parent prints "worker PID" for each, waits
 * for them and exits with status 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long long worker_spin(unsigned long long seed) {
    volatile unsigned long long x = seed;
    for (int i = 0; i < 2000000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static int worker(double seconds) {
    unsigned long long sum = 0;
    double end = now() + seconds;
    for (int r = 0; now() < end; r++) {
        sum += worker_spin((unsigned long long)r) & 1;
        for (int i = 0; i < 200; i++) {
            unsigned char *p = malloc(64 + (size_t)(i % 100));
            memset(p, i & 0xff, 64);
            sum += p[3];
            free(p);
        }
        pthread_mutex_lock(&lock);
        sum++;
        pthread_mutex_unlock(&lock);
        usleep(5000);
    }
    return (int)(sum & 1);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.5;
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        pids[i] = fork();
        if (pids[i] < 0) return 1;
        if (pids[i] == 0) _exit(worker(seconds) * 0);
        printf("worker %d\n", (int)pids[i]);
        fflush(stdout);
    }
    for (int i = 0; i < 2; i++) waitpid(pids[i], NULL, 0);
    return 0;
}
