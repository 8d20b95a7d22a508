/* fork while other threads allocate: 3 worker threads malloc/free in a loop while the main thread
 * forks 20 children one after another; each child makes exactly 10 malloc(72) (never freed) and
 * leaves with _exit(0). The parent checks that every child exited 0, stops the workers and
 * prints "ok". The children must neither deadlock nor inherit the parent's counts. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 20

static volatile int stop;
static volatile unsigned long sink;

static void *worker(void *arg) {
    (void)arg;
    while (!stop) {
        char *p = malloc(40);
        memset(p, 1, 40);
        sink += (unsigned char)p[39];
        free(p);
    }
    return NULL;
}

int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 10;
    for (int c = 0; c < CHILDREN; c++) {
        pid_t pid = fork();
        if (pid < 0) return 11;
        if (pid == 0) {
            for (int i = 0; i < 10; i++) {
                char *p = malloc(72);
                memset(p, i, 72);
                sink += (unsigned char)p[71];
            }
            _exit(0);
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 12;
    }
    stop = 1;
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("ok\n");
    return 0;
}
