/* Children made without fork's handlers: clone(2) and clone3(2) through syscall(), which glibc's
 * pthread_atfork handlers never see, and a CLONE_VM | CLONE_VFORK child that shares the parent's
 * memory until it exits. Each child allocates a little and leaves with _exit(status); the parent
 * prints how each ended. (Such children are profiled as any other; one that shares
 * memory must never have the profiler write into it.) */
#define _GNU_SOURCE
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *volatile sink;

static void child_work(void) {
    for (int i = 0; i < 100; i++) {
        char *p = malloc(64 + (size_t)i);
        free(sink);
        sink = p;
    }
}

static int report(const char *what, pid_t pid) {
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, __WALL) != pid) {
        printf("%s: failed\n", what);
        return 1;
    }
    printf("%s: exit %d\n", what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

static char vm_stack[64 * 1024] __attribute__((aligned(16)));

static int vm_child(void *arg) {
    (void)arg;
    _exit(7); /* shares the parent's memory: must not be written by the profiler */
}

int main(void) {
    child_work();
    int bad = 0;
    fflush(stdout);
    pid_t pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        child_work();
        _exit(5);
    }
    bad |= report("clone", pid);

    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.exit_signal = SIGCHLD;
    fflush(stdout);
    pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        child_work();
        _exit(6);
    }
    bad |= report("clone3", pid);

    fflush(stdout);
    pid = clone(vm_child, vm_stack + sizeof vm_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    bad |= report("vfork-like", pid);

    child_work();
    free(sink);
    printf("parent done\n");
    return bad;
}
