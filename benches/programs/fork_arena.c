/* For benches/glibc_versions.sh: two threads allocate and free 1-4 KiB blocks with one arena
 * (M_ARENA_MAX=1) while the main thread forks 300 children, one every 2 ms, each of which exits at
 * once. fork takes every arena's lock in the parent, so the workers wait on main_arena's lock
 * both for each other and for fork (on glibc 2.41 and later that wait goes through
 * __internal_syscall_cancel). Expected: malloc's arena lock named (main_arena), the workers'
 * waits at churn. Prints the children that exited 0. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

__attribute__((noinline)) static unsigned long churn(unsigned long s) {
    void *live[64] = {0};
    unsigned long sum = 0;
    while (!stop) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int slot = (int)(s % 64);
        free(live[slot]);
        live[slot] = malloc(1024 + (s >> 8) % 3072);
        sum += (unsigned long)live[slot] & 0xff;
    }
    for (int i = 0; i < 64; i++) free(live[i]);
    return sum;
}

static void *worker(void *arg) { return (void *)churn((unsigned long)arg * 2654435761ul + 1); }

int main(void) {
    mallopt(M_ARENA_MAX, 1);
    pthread_t t[2];
    for (unsigned long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    int ok = 0;
    for (int i = 0; i < 300; i++) {
        pid_t pid = fork();
        if (pid == 0) _exit(0);
        int status;
        if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ok++;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%d children exited 0\n", ok);
    return 0;
}
