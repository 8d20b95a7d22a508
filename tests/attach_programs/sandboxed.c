/* A program in a seccomp sandbox that kills it for any system call but the few it makes (as
 * systemd's SystemCallFilter= or OpenSSH's privilege separation do): prints "ready", installs the
 * filter, sleeps argv[1] rounds of 10 ms, then prints "done". Made to call dlopen, it would die of
 * SIGSYS at the first file it opened. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_clock_nanosleep),
        ALLOW(SYS_nanosleep),
        ALLOW(SYS_write),
        ALLOW(SYS_exit_group),
        ALLOW(SYS_exit),
        ALLOW(SYS_restart_syscall),
        ALLOW(SYS_rt_sigreturn),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    printf("ready\n");
    fflush(stdout);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return 1;
    for (int r = 0; r < rounds; r++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    printf("done\n");
    return 0;
}
