/* Two threads start /bin/true 150 times each, one by vfork + execv, the other by posix_spawn,
 * while the main thread allocates; prints how many children exited 0. */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
/* One vfork + execv, in a frame of its own (nothing of the caller's lives across vfork). */
__attribute__((noinline)) static int true_by_vfork(void) {
    char *argv[] = {"true", NULL};
    pid_t pid = vfork();
    if (pid == 0) {
        execv("/bin/true", argv);
        _exit(127);
    }
    int st;
    return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void *by_vfork(void *arg) {
    (void)arg;
    long ok = 0;
    for (int i = 0; i < 150; i++) ok += true_by_vfork();
    return (void *)ok;
}

static void *by_spawn(void *arg) {
    (void)arg;
    long ok = 0;
    for (int i = 0; i < 150; i++) {
        char *argv[] = {"true", NULL};
        pid_t pid;
        int st;
        if (posix_spawn(&pid, "/bin/true", NULL, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    return (void *)ok;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, by_vfork, NULL);
    pthread_create(&b, NULL, by_spawn, NULL);
    void *ra, *rb;
    long allocs = 0;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    for (int i = 0; i < 10000; i++, allocs++) free(malloc(64));
    printf("vfork %ld, posix_spawn %ld, allocations %ld\n", (long)ra, (long)rb, allocs);
    return 0;
}
