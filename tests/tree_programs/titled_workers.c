/* Forked workers that name their role as servers do (PostgreSQL's setproctitle): each child
 * overwrites the argument area with "titled: worker N", computes for a while without any call
 * stallscope interposes (no allocation, no lock: its profile is written at its exit, by the
 * path of a child that made no call), prints its own CPU time ("cpu PID NS") and exits with
 * exit(0). The parent waits for them and exits 0. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

int main(int argc, char **argv) {
    size_t area = 0;
    for (int i = 0; i < argc; i++) area += strlen(argv[i]) + 1;
    int workers = 2;
    for (int w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            char title[64];
            snprintf(title, sizeof title, "titled: worker %d", w);
            memset(argv[0], 0, area);
            strncpy(argv[0], title, area - 1);
            double x = 0;
            for (long i = 0; i < 60000000L; i++) x += (double)i * 0.5;
            sink = x;
            struct timespec ts;
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
            printf("cpu %d %lld\n", (int)getpid(), (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
            fflush(stdout);
            exit(0);
        }
    }
    int status, failed = 0;
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed;
}
