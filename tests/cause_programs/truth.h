/* What Linux itself says about each thread, for checking stallscope's thread states against
 * independent figures (no root needed).
 *
 * A thread calls truth_start() when it begins and truth_end("role") just before it returns; with
 * CAUSE_TRUTH=1 in the environment truth_end writes one line to stderr:
 *
 *   truth role=worker tid=1234 life_ns=... cpu_ns=... utime_ticks=... stime_ticks=...
 *         exec_ns=... run_delay_ns=... slices=... minflt=... majflt=... vcsw=... ivcsw=...
 *
 *   cpu_ns        clock_gettime(CLOCK_THREAD_CPUTIME_ID): the thread's CPU time, ns
 *   utime/stime   /proc/thread-self/stat fields 14 and 15, in clock ticks (sysconf(_SC_CLK_TCK))
 *   exec_ns, run_delay_ns, slices
 *                 /proc/thread-self/schedstat: time on a CPU, time runnable waiting for a CPU
 *                 (run-queue delay), number of times it was put on a CPU; ns (CONFIG_SCHED_INFO)
 *   minflt/majflt /proc/thread-self/stat fields 10 and 12: this thread's page faults
 *   vcsw/ivcsw    /proc/thread-self/status voluntary_ctxt_switches / nonvoluntary_ctxt_switches
 *
 * Without CAUSE_TRUTH it does nothing but read the clock twice per thread. Only write(2) and
 * snprintf are used, so it can be called from any thread. */
#ifndef CAUSE_TRUTH_H
#define CAUSE_TRUTH_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread unsigned long long truth_start_ns;

static unsigned long long truth_clock(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void truth_start(void) { truth_start_ns = truth_clock(CLOCK_MONOTONIC); }

static int truth_read(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    return (int)n;
}

/* The value after "key:" in a /proc status text. */
static unsigned long long truth_status_field(const char *text, const char *key) {
    const char *p = strstr(text, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

static void truth_end(const char *role) {
    static int enabled = -1;
    if (enabled < 0) enabled = getenv("CAUSE_TRUTH") != NULL;
    if (!enabled) return;
    unsigned long long life = truth_clock(CLOCK_MONOTONIC) - truth_start_ns;
    unsigned long long cpu = truth_clock(CLOCK_THREAD_CPUTIME_ID);
    char stat[1024], sched[128], status[4096], line[512];
    unsigned long long minflt = 0, majflt = 0, utime = 0, stime = 0;
    unsigned long long exec = 0, delay = 0, slices = 0;
    if (truth_read("/proc/thread-self/stat", stat, sizeof stat)) {
        const char *p = strrchr(stat, ')'); /* the name may hold spaces */
        /* fields after ")": 3 state, 4 ppid, ... 10 minflt, 12 majflt, 14 utime, 15 stime */
        unsigned long long f[16] = {0};
        int field = 2;
        for (p = p ? p + 1 : stat; *p && field < 15;) {
            while (*p == ' ') p++;
            field++;
            f[field] = strtoull(p, NULL, 10);
            while (*p && *p != ' ') p++;
        }
        minflt = f[10], majflt = f[12], utime = f[14], stime = f[15];
    }
    if (truth_read("/proc/thread-self/schedstat", sched, sizeof sched))
        sscanf(sched, "%llu %llu %llu", &exec, &delay, &slices);
    truth_read("/proc/thread-self/status", status, sizeof status);
    int n = snprintf(line, sizeof line,
                     "truth role=%s tid=%ld life_ns=%llu cpu_ns=%llu utime_ticks=%llu stime_ticks=%llu "
                     "exec_ns=%llu run_delay_ns=%llu slices=%llu minflt=%llu majflt=%llu vcsw=%llu ivcsw=%llu\n",
                     role, (long)syscall(SYS_gettid), life, cpu, utime, stime, exec, delay, slices, minflt,
                     majflt, truth_status_field(status, "\nvoluntary_ctxt_switches:"),
                     truth_status_field(status, "nonvoluntary_ctxt_switches:"));
    if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) return;
}

/* argv[i] as a positive number, or `fallback`. */
static long arg_or(int argc, char **argv, int i, long fallback) {
    if (argc <= i) return fallback;
    long v = strtol(argv[i], NULL, 10);
    return v > 0 ? v : fallback;
}

#endif
