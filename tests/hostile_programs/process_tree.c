/* A process tree of every shape `stallscope run` must follow into one run:
 * a fork child that execs a shell (an exec chain), which starts a command of its own; a
 * posix_spawn child (this program again, as a leaf that exits 3); a child that forks a grandchild
 * and exits at once, so that the grandchild is re-parented (an orphan, as a daemon would be) before
 * it execs this program again (its profile must still name its real parent); and
 * a vfork child that execs `true`. Every process allocates. The output is deterministic: the
 * parent prints what it collected, in a fixed order, after all of them ended. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *volatile sink;

static void allocate(int n) {
    for (int i = 0; i < n; i++) {
        sink = malloc(64 + (size_t)i);
        free(sink);
    }
}

static int status_of(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "leaf") == 0) {
        allocate(100);
        return 3;
    }
    if (argc > 2 && strcmp(argv[1], "orphan") == 0) {
        allocate(200);
        const char msg[] = "orphan done\n";
        if (write(atoi(argv[2]), msg, sizeof msg - 1) < 0) return 1;
        return 0;
    }
    allocate(1000);
    fflush(stdout);

    /* 1. fork + exec: sh, which runs a command of its own. */
    pid_t sh = fork();
    if (sh == 0) {
        allocate(10);
        execl("/bin/sh", "sh", "-c", "echo shell says hi; ls / >/dev/null; exit 4", (char *)NULL);
        _exit(127);
    }
    int sh_status = status_of(sh);

    /* 2. posix_spawn of this program as a leaf. */
    pid_t leaf;
    char *leaf_argv[] = {argv[0], "leaf", NULL};
    if (posix_spawn(&leaf, "/proc/self/exe", NULL, NULL, leaf_argv, environ) != 0) return 10;
    int leaf_status = status_of(leaf);

    /* 3. An orphan: the child forks a grandchild and exits; the grandchild reports through a pipe. */
    int fds[2];
    if (pipe(fds) != 0) return 11;
    pid_t middle = fork();
    if (middle == 0) {
        if (fork() == 0) {
            close(fds[0]);
            usleep(100 * 1000); /* its parent has exited by now */
            char fd[16];
            snprintf(fd, sizeof fd, "%d", fds[1]);
            execl("/proc/self/exe", argv[0], "orphan", fd, (char *)NULL);
            _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    int middle_status = status_of(middle);
    char buf[64] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);

    /* 4. vfork + exec. */
    pid_t t = vfork();
    if (t == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int true_status = status_of(t);

    printf("sh exited %d\nleaf exited %d\nmiddle exited %d\n%strue exited %d\n", sh_status,
           leaf_status, middle_status, n > 0 ? buf : "no orphan\n", true_status);
    return 0;
}
