/* Seccomp sandboxes: where a program installs a filter, through prctl(PR_SET_SECCOMP) or
 * seccomp(2) by syscall() (libseccomp, systemd, OpenSSH and Chromium take one of the two), the
 * interposer ends its recording first (ss_before_sandbox, lifecycle.c). A raw `syscall`
 * instruction (Go, hand-written assembly) goes unseen. */
#include "ss_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>


static int ss_prctl_installs(int option, unsigned long mode, unsigned long filter) {
    if (option != PR_SET_SECCOMP) return 0;
    if (mode == SECCOMP_MODE_STRICT) return 1; /* the kernel ignores the third argument */
    return mode == SECCOMP_MODE_FILTER && filter != 0;
}

/* glibc's prctl is variadic and reads four more arguments, whatever the option: as syscall()'s hook
 * (futex.c), this takes them from the registers a variadic call fills the same way. */
SS_EXPORT int ss_prctl_hook(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
    __asm__("prctl");
SS_EXPORT int ss_prctl_hook(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
    ss_ensure_resolved();
    if (SS_UNLIKELY(ss_prctl_installs(option, a2, a3))) ss_before_sandbox();
    if (ss_real.prctl) return ss_real.prctl(option, a2, a3, a4, a5);
    return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
}

/* ---- the probe: a filter in place before the program starts ----
 *
 * A filter inherited from outside (a systemd unit's SystemCallFilter=, a sandbox launcher) is in
 * place before the program starts and may kill it for a call only the interposer makes (a CPU
 * timer, unshare, a thread's CPU clock). `stallscope run`, finding itself under a filter, first
 * loads the interposer into a process of its own under the same filter with STALLSCOPE_PROBE:
 * the interposer starts as it would in the program (ss_init), then makes each system call of its
 * own once here, naming it on standard output before it makes it, and ends the process. A probe
 * the filter kills names the call, and `run` then runs the program unprofiled. A sleep or futex
 * that the filter refuses (an error instead of a kill) would leave the flusher spinning: named
 * with a `!`. Keep the list in step with the calls the interposer makes. */

static void ss_probe_say(const char *name) {
    size_t n = strlen(name);
    char line[64];
    if (n + 1 >= sizeof line) return;
    memcpy(line, name, n);
    line[n] = '\n';
    ssize_t ignored = write(1, line, n + 1);
    (void)ignored;
}

/* A call the flusher cannot do without: refused (not killed), it is named with a `!`. */
static void ss_probe_needed(const char *name, long rc, int expected_errno) {
    if (rc < 0 && errno != expected_errno && errno != EINTR) {
        char line[64];
        size_t n = strlen(name);
        memcpy(line, name, n);
        line[n] = '!';
        line[n + 1] = 0;
        ss_probe_say(line);
    }
}

static void ss_probe_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    (void)uc;
}

static void *ss_probe_thread(void *arg) {
    (void)arg;
    ss_probe_say("unshare");
    syscall(SYS_unshare, CLONE_FILES);
    ss_probe_say("close_range");
    syscall(SYS_close_range, 1u << 20, ~0u, 0u);
    ss_probe_say("exit");
    return NULL;
}

static void ss_probe_system_calls(void) {
    char buf[512];
    pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
    ss_probe_say("getppid");
    (void)getppid();
    ss_probe_say("clock_gettime");
    struct timespec ts;
    syscall(SYS_clock_gettime, ss_thread_clock(tid), &ts);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    ss_probe_say("timer_create");
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGRTMAX;
    sev._sigev_un._tid = tid;
    int timer = -1;
    if (syscall(SYS_timer_create, ss_thread_clock(tid), &sev, &timer) == 0) {
        struct itimerspec off;
        memset(&off, 0, sizeof off);
        ss_probe_say("timer_settime");
        syscall(SYS_timer_settime, timer, 0, &off, NULL);
        ss_probe_say("timer_delete");
        syscall(SYS_timer_delete, timer);
    }
    ss_probe_say("rt_sigaction");
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ss_probe_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    int handled = ss_real.sigaction && ss_real.sigaction(SIGRTMAX, &sa, &old) == 0;
    ss_probe_say("rt_sigprocmask");
    sigset_t none, mask;
    sigemptyset(&none);
    pthread_sigmask(SIG_BLOCK, &none, &mask);
    ss_probe_say("rt_sigpending");
    uint64_t pending = 0;
    syscall(SYS_rt_sigpending, &pending, 8);
    ss_probe_say("tgkill");
    syscall(SYS_tgkill, pid, tid, 0);
    if (handled) {
        ss_probe_say("rt_sigreturn"); /* a handler's return: the sampler's */
        syscall(SYS_tgkill, pid, tid, SIGRTMAX);
        ss_real.sigaction(SIGRTMAX, &old, NULL);
    }
    ss_probe_say("sched_getscheduler");
    sched_getscheduler(0);
    ss_probe_say("sched_yield");
    sched_yield();
    ss_probe_say("prctl");
    syscall(SYS_prctl, PR_GET_NAME, buf, 0, 0, 0);
    ss_probe_say("openat");
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ss_probe_say("read");
        ssize_t got = read(fd, buf, sizeof buf);
        (void)got;
        ss_probe_say("fcntl");
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
        ss_probe_say("close");
        if (high >= 0) close(high);
        close(fd);
    }
    ss_probe_say("getdents64");
    fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        syscall(SYS_getdents64, fd, buf, sizeof buf);
        close(fd);
    }
    ss_probe_say("readlink");
    ssize_t len = readlink("/proc/self/exe", buf, sizeof buf);
    (void)len;
    ss_probe_say("getcwd");
    char *cwd = getcwd(buf, sizeof buf);
    (void)cwd;
    ss_probe_say("process_vm_readv");
    uint64_t word = 1, copy = 0;
    struct iovec local = {&copy, sizeof copy}, remote = {&word, sizeof word};
    syscall(SYS_process_vm_readv, pid, &local, 1ul, &remote, 1ul, 0ul);
    ss_probe_say("kcmp");
    syscall(SYS_kcmp, pid, pid, 1 /* KCMP_VM */, 0, 0);
    ss_probe_say("mmap");
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED) {
        ss_probe_say("madvise");
        madvise(page, 4096, MADV_DONTNEED);
        ss_probe_say("mprotect");
        mprotect(page, 4096, PROT_READ);
        ss_probe_say("munmap");
        munmap(page, 4096);
    }
    ss_probe_say("futex");
    uint32_t futex_word = 0;
    struct timespec none_ts = {0, 0};
    ss_probe_needed("futex", syscall(SYS_futex, &futex_word, FUTEX_WAKE, 1, NULL, NULL, 0), 0);
    ss_probe_needed("futex", syscall(SYS_futex, &futex_word, FUTEX_WAIT, 1, &none_ts, NULL, 0), EAGAIN);
    ss_probe_say("nanosleep");
    struct timespec tiny = {0, 1};
    ss_probe_needed("nanosleep", nanosleep(&tiny, NULL), 0);
    ss_probe_say("clone3"); /* the flusher: a thread of its own descriptor table */
    pthread_t th;
    if (ss_real.pthread_create && ss_real.pthread_create(&th, NULL, ss_probe_thread, NULL) == 0) pthread_join(th, NULL);
    ss_probe_say("ok");
    syscall(SYS_exit_group, 0);
}

/* At start, before the set-up's own calls (each of which it names): the probe, when `run` asks
 * for it (STALLSCOPE_PROBE); it never returns. */
static void ss_sandbox_start(void) {
    if (SS_UNLIKELY(ss_option_flag(SS_OPT_PROBE))) ss_probe_system_calls();
}

SS_STEPS(ss_sandbox_steps) = {
    .name = "sandbox",
    .on_start = ss_sandbox_start,
};
