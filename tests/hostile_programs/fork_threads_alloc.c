/* Forks 40 times while 3 threads allocate and free without pause (the allocator's and the
 * profiler's locks may be held at the fork); each child allocates, frees and exits with 7.
 * Prints how many children exited 7. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;

static void *churn(void *arg) {
    void *keep[64] = {0};
    for (unsigned i = 0; !stop; i++) {
        unsigned k = i % 64;
        free(keep[k]);
        keep[k] = malloc(16 + (i * 7919) % 4000);
        memset(keep[k], 1, 16);
    }
    for (int k = 0; k < 64; k++) free(keep[k]);
    return arg;
}

int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, churn, NULL);
    int ok = 0;
    for (int i = 0; i < 40; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            char *p = malloc(1000);
            memset(p, 2, 1000);
            char *q = realloc(p, 100000);
            free(q);
            _exit(7);
        }
        int st;
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7) ok++;
    }
    stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("children %d of 40\n", ok);
    return 0;
}
