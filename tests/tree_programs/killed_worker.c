/* A parent that forks a worker and kills it with SIGTERM after 600 ms, as a process pool's
 * terminate() does: the worker allocates until it dies, and never reaches its exit. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
    pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
        double start = now();
        volatile size_t sum = 0;
        while (now() - start < 20.0) { /* killed long before */
            for (int i = 0; i < 1000; i++) {
                char *p = malloc(32 + (size_t)(i % 64));
                if (!p) return 3;
                p[0] = (char)i;
                sum += (size_t)p[0];
                free(p);
            }
        }
        return 4;
    }
    struct timespec wait = {0, 600 * 1000000L};
    nanosleep(&wait, NULL);
    kill(child, SIGTERM);
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 5;
    printf("worker %d killed by %d\n", (int)child, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 0;
}
