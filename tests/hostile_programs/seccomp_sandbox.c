/* A program that locks itself into a seccomp sandbox halfway through, as systemd's
 * SystemCallFilter=, OpenSSH's privilege separation or a browser's renderer do: the filter allows
 * what the program itself goes on to do (allocate, lock, make a thread, fork, sleep, print) and
 * kills the whole process (SIGSYS) for any other system call: getpid, gettid, clock_gettime on a
 * thread's clock, timer_*, openat, tgkill, what a profiler's own code would make.
 *
 * Usage: seccomp_sandbox WAY THREADS [TRIGGER]
 *   WAY: "seccomp" (seccomp(2) through syscall(), with TSYNC: every thread is filtered, as
 *   libseccomp does) or "prctl" (prctl(PR_SET_SECCOMP): the calling thread and those it makes).
 * Prints "ready"; THREADS workers allocate, lock a shared mutex and compute for 0.1 s before the
 * filter (or until the file TRIGGER exists: `stallscope attach` has opened a window) and 0.25 s
 * after it; then the main thread makes one more thread and forks a child that exits with 7.
 * Prints "sandboxed <way> threads <n> child 7" and exits 0. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int phase; /* 0: before the filter, 1: after it, 2: stop */
static unsigned long shared_sum;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no system call */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *work(void *arg) {
    unsigned long local = (unsigned long)(size_t)arg, rounds = 0;
    while (phase < 2) {
        char *p = malloc(64 + rounds % 512);
        memset(p, (int)rounds, 64);
        local += (unsigned char)p[7];
        free(p);
        for (int i = 0; i < 2000; i++) local = local * 6364136223846793005ul + 1442695040888963407ul;
        if (++rounds % 64 == 0) {
            pthread_mutex_lock(&lock);
            shared_sum += local & 0xff;
            pthread_mutex_unlock(&lock);
        }
    }
    return (void *)(size_t)rounds;
}

static void spin_for(double seconds) {
    double end = now_s() + seconds;
    while (now_s() < end) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

int main(int argc, char **argv) {
    const char *way = argc > 1 ? argv[1] : "seccomp";
    int nthreads = argc > 2 ? atoi(argv[2]) : 2;
    const char *trigger = argc > 3 ? argv[3] : NULL;
    if (nthreads < 0 || nthreads > 64) return 2;
    printf("ready\n");
    fflush(stdout);
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, work, (void *)(size_t)i);
    if (trigger) {
        /* Asleep most of the time: attach's ptrace needs a thread waiting in a system call. */
        struct timespec naps = {0, 20000000};
        while (access(trigger, F_OK) != 0) nanosleep(&naps, NULL);
    } else {
        spin_for(0.1);
    }

    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_fstat), ALLOW(SYS_newfstatat), ALLOW(SYS_ioctl), ALLOW(SYS_futex), ALLOW(SYS_brk), ALLOW(SYS_mmap),
        ALLOW(SYS_munmap), ALLOW(SYS_mprotect), ALLOW(SYS_madvise), ALLOW(SYS_nanosleep),
        ALLOW(SYS_clock_nanosleep), ALLOW(SYS_restart_syscall), ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_sched_yield), ALLOW(SYS_clone), ALLOW(SYS_clone3),
        ALLOW(SYS_set_robust_list), ALLOW(SYS_rseq), ALLOW(SYS_wait4), ALLOW(SYS_exit),
        ALLOW(SYS_exit_group),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    /* The probes programs make first (systemd, libseccomp): they install nothing. */
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) == 0) return 3;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL) == 0) return 3;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 4;
    int rc = strcmp(way, "prctl") == 0 ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)
                                       : (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                                      SECCOMP_FILTER_FLAG_TSYNC, &prog);
    if (rc != 0) return 5;

    phase = 1;
    spin_for(0.25);
    pthread_t late;
    pthread_create(&late, NULL, work, (void *)99);
    spin_for(0.02);
    phase = 2;
    pthread_join(late, NULL);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    pid_t child = fork();
    if (child == 0) _exit(7);
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 6;
    printf("sandboxed %s threads %d child %d\n", way, nthreads, WEXITSTATUS(status));
    return 0;
}
