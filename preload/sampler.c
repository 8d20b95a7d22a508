/* Thread-state sampling (docs/STATES.md): where each thread's time goes, running or not.
 *
 * CPU samples: each thread has a POSIX timer on its own CPU-time clock that delivers a signal to
 * that thread (SIGEV_THREAD_ID) every 1/cpu_hz seconds of its CPU time. The handler notes the
 * interrupted instruction, the CPU time since the previous sample, and the callers (unwound; only
 * outside the interposer's own guarded code), into a ring owned by the thread (one producer: the
 * thread itself; one consumer: the flush). Everything it calls is async-signal-safe.
 *
 * Wall samples: a thread that is not running gets no signal (a signal would also interrupt its
 * sleep, which the program must not see). The flusher thread reads its state, system call,
 * arguments, stack pointer and pc from /proc/self/task/TID/{stat,syscall} instead, and scans the
 * top of its stack for words that point into loaded code (candidate return addresses, checked
 * against the code bytes by the reader).
 *
 * The signal is SIGPROF unless the program has a handler for it; if the program installs one
 * later, sampling moves to a free real-time signal first ("steps aside") and the profile says so. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* The /proc files of a thread the flusher keeps open (ss_read_proc, below). */
enum ss_proc_file { SS_PROC_STAT, SS_PROC_SCHEDSTAT, SS_PROC_SYSCALL, SS_PROC_STATUS };
_Static_assert(SS_PROC_STATUS + 1 == SS_PROC_FILES, "a kept descriptor for each file");
static size_t ss_read_proc(struct ss_thread *t, enum ss_proc_file f, const char *path, char *buf, size_t cap);


static int ss_sample_signal;     /* 0: CPU sampling off */
static int ss_moved_from;
static uint32_t ss_sampling_flags;
static uint64_t ss_cpu_interval_ns;
static uint64_t ss_wall_interval_ns;
SS_FORK_STATE static uint64_t ss_last_wall_pass;
SS_FORK_STATE static uint64_t ss_cpu_samples, ss_wall_samples, ss_dropped_samples;
static uint64_t ss_clock_tick_us = 10000; /* a clock tick (USER_HZ) in microseconds */

static uint64_t ss_self_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The real functions; a call made while another thread initialises looks them up itself. */
static int ss_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    int (*real)(int, const struct sigaction *, struct sigaction *) = ss_real.sigaction;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "sigaction");
    return real ? real(sig, act, old) : -1;
}

static __sighandler_t ss_real_signal(int sig, __sighandler_t handler) {
    __sighandler_t (*real)(int, __sighandler_t) = ss_real.signal;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "signal");
    return real ? real(sig, handler) : SIG_ERR;
}

/* The sampling part of a node, for a new thread (ss_thread_reset, threads.c): its rings (in the
 * node's mapping) empty, no timer, no look yet, no kernel figures (they start at the thread's
 * start: ss_sampler_thread_start, ss_sampler_cover). */
void ss_sampler_thread_reset(struct ss_thread *t) {
    struct ss_sampler_thread *s = &t->sampler;
    s->cpu_ring = ss_node_rings(t);
    s->wall_ring = s->cpu_ring ? s->cpu_ring + SS_CPU_RING : NULL;
    s->cpu_head = s->cpu_tail = s->wall_head = s->wall_tail = 0;
    s->has_timer = 0;
    s->last_cpu_ns = s->last_wall_ns = s->last_wall_cpu_ns = 0;
    memset(&s->last_wall, 0, sizeof s->last_wall);
    memset(s->still, 0, sizeof s->still);
    s->still_next = 0;
    s->cpu_head_seen = 0;
    s->sig_blocked = 0;
    s->looks_deferred = 0;
    s->sched_head = s->sched_tail = 0;
    memset(&s->sched_last, 0, sizeof s->sched_last);
    memset(&s->last_recorded, 0, sizeof s->last_recorded);
    memset(&s->last_other, 0, sizeof s->last_other);
    s->look_ticks = s->ended_seen = 0;
    s->last_wall_recorded = 0;
}

/* ---- the rings ---- */

static int ss_ring_push(struct ss_sample *ring, uint32_t size, uint32_t *head, uint32_t *tail,
                        const struct ss_sample *s) {
    uint32_t h = *head, t = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
    if (h - t >= size) {
        __atomic_fetch_add(&ss_dropped_samples, 1, __ATOMIC_RELAXED);
        return 0;
    }
    ring[h & (size - 1)] = *s;
    __atomic_store_n(head, h + 1, __ATOMIC_RELEASE);
    return 1;
}

/* Appends what a ring holds to `out` as one SAMPLES record of thread `serial` and empties it
 * (flushes run one at a time). Returns the samples written, or -1 when out of memory. */
static int ss_ring_write(struct ss_buf *out, uint32_t serial, struct ss_sample *ring, uint32_t size, uint32_t *head,
                         uint32_t *tail) {
    uint32_t h = __atomic_load_n(head, __ATOMIC_ACQUIRE), t = *tail;
    if (h == t) return 0;
    uint32_t n = h - t, first = t & (size - 1);
    uint32_t run = n < size - first ? n : size - first;
    struct ss_samples_record r = {serial, n};
    if (out == &ss_fold_out && out->len + n * sizeof *ring + 64 > SS_FOLD_OUT_MAX) {
        __atomic_fetch_add(&ss_dropped_samples, n, __ATOMIC_RELAXED); /* bounded between flushes */
    } else if (ss_buf_record3(out, SS_REC_SAMPLES, &r, sizeof r, &ring[first], run * sizeof *ring, ring,
                              (n - run) * sizeof *ring) != 0) {
        return -1;
    }
    __atomic_store_n(tail, h, __ATOMIC_RELEASE);
    return (int)n;
}

/* Appends a thread's kernel figures (SCHED points) to `out` under `serial` and empties the ring.
 * Returns the points written, or -1 when out of memory. */
static int ss_sched_write(struct ss_buf *out, uint32_t serial, struct ss_thread *t) {
    uint32_t h = __atomic_load_n(&t->sampler.sched_head, __ATOMIC_ACQUIRE), tl = t->sampler.sched_tail;
    if (h == tl) return 0;
    uint32_t n = h - tl, first = tl & (SS_SCHED_RING - 1);
    uint32_t run = n < SS_SCHED_RING - first ? n : SS_SCHED_RING - first;
    struct ss_sched_record r = {serial, n};
    const struct ss_sched_point *ring = t->sampler.sched_ring;
    if (out == &ss_fold_out && out->len + n * sizeof *ring + 64 > SS_FOLD_OUT_MAX) {
        /* bounded between flushes: the group loses these points */
    } else if (ss_buf_record3(out, SS_REC_SCHED, &r, sizeof r, &ring[first], run * sizeof *ring, ring,
                              (n - run) * sizeof *ring) != 0) {
        return -1;
    }
    __atomic_store_n(&t->sampler.sched_tail, h, __ATOMIC_RELEASE);
    return (int)n;
}

/* Moves a thread's samples to `out` under another serial (the group it is folded into). */
int ss_sampler_drain(struct ss_thread *t, struct ss_buf *out, uint32_t serial) {
    if (!t->sampler.cpu_ring) return 0;
    if (ss_ring_write(out, serial, t->sampler.cpu_ring, SS_CPU_RING, &t->sampler.cpu_head, &t->sampler.cpu_tail) < 0) return -1;
    if (ss_ring_write(out, serial, t->sampler.wall_ring, SS_WALL_RING, &t->sampler.wall_head, &t->sampler.wall_tail) < 0) return -1;
    if (ss_waits_write(out, serial, t) < 0) return -1;
    if (ss_sched_write(out, serial, t) < 0) return -1;
    return 0;
}

/* ---- signals sent to the process ----
 * The kernel gives a process-directed signal (kill, alarm, a child's SIGCHLD) to the main thread
 * when it can take it, and wakes it. But any thread that enters signal delivery may dequeue it
 * first, and without stallscope a busy worker never does; with it, every CPU sample does. So a
 * worker in the sample handler that finds such a signal pending, with a handler installed, and
 * not blocked by the main thread, waits (sleeping, all signals blocked, at most 10 ms) for the
 * main thread to take it. The program sees no mask or siginfo changed; the worker is only
 * delayed, in this rare case. The flusher publishes the main thread's mask. */

static size_t ss_read_small(const char *path, char *buf, size_t cap);
static uint64_t ss_parse_hex(const char *p);

static uint32_t ss_main_tid;      /* the main thread, 0 when gone or unknown */
static uint64_t ss_main_blocked;  /* its blocked signals, bit sig-1, as the flusher last saw */
static uint64_t ss_route_backoff_until;

#define SS_SIGNALS_INTERNAL ((1ull << (32 - 1)) | (1ull << (33 - 1))) /* glibc's own (cancel, setxid) */

static void ss_let_main_take_process_signals(int own) {
    if (!__atomic_load_n(&ss_main_tid, __ATOMIC_ACQUIRE)) return;
    uint64_t ignore = (1ull << (own - 1)) | SS_SIGNALS_INTERNAL | __atomic_load_n(&ss_main_blocked, __ATOMIC_RELAXED);
    uint64_t pending = 0;
    if (syscall(SYS_rt_sigpending, &pending, 8) != 0 || !(pending &= ~ignore)) return;
    uint64_t handled = 0; /* default and ignored dispositions act on the process, whoever takes them */
    for (int sig = 1; sig <= 64; sig++) {
        if (!(pending >> (sig - 1) & 1)) continue;
        struct sigaction old;
        if (ss_real_sigaction(sig, NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
            handled |= 1ull << (sig - 1);
    }
    if (!handled || ss_mono_ns() < __atomic_load_n(&ss_route_backoff_until, __ATOMIC_RELAXED)) return;
    for (int waited_us = 0; handled && waited_us < 10000; waited_us += 50) {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
        if (syscall(SYS_rt_sigpending, &pending, 8) != 0) return;
        handled &= pending;
    }
    /* The main thread did not take it (stuck in an uninterruptible wait, say): the workers stop
     * waiting for a while rather than be slowed down at every sample. */
    if (handled) __atomic_store_n(&ss_route_backoff_until, ss_mono_ns() + 100000000ull, __ATOMIC_RELAXED);
}

/* The flusher's tick: which thread is main, and what it blocks. */
static void ss_watch_main(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (!(__atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE) & SS_THREAD_MAIN)) continue;
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SS_NODE_LIVE) break;
        char path[64], buf[4096];
        struct ss_str s = {path, 0, sizeof path};
        ss_str_cat(&s, "/proc/self/task/");
        ss_str_u64(&s, t->rec.tid);
        ss_str_cat(&s, "/status");
        const char *p = ss_read_proc(t, SS_PROC_STATUS, path, buf, sizeof buf) ? strstr(buf, "\nSigBlk:") : NULL;
        if (!p) break;
        for (p += 8; *p == ' ' || *p == '\t'; p++) {}
        __atomic_store_n(&ss_main_blocked, ss_parse_hex(p), __ATOMIC_RELAXED);
        __atomic_store_n(&ss_main_tid, t->rec.tid, __ATOMIC_RELEASE);
        return;
    }
    __atomic_store_n(&ss_main_tid, 0, __ATOMIC_RELEASE);
}

/* ---- CPU samples ---- */

/* Whether `p` is one of the thread records on the list (async-signal-safe: a lock-free walk). */
static int ss_is_thread_record(const void *p) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if ((const void *)t == p) return 1;
    return 0;
}

static void ss_on_cpu_sample(int sig, siginfo_t *si, void *ucv) {
    /* In a seccomp sandbox (lifecycle.c, ss_before_sandbox) every timer of ours is deleted, and a
     * signal one left pending must make no system call (not even the thread clock's). */
    if (SS_UNLIKELY(__atomic_load_n(&ss_sandboxed, __ATOMIC_RELAXED)) && si->si_code == SI_TIMER &&
        ss_is_thread_record(si->si_value.sival_ptr))
        return;
    int saved_errno = errno;
    struct ss_thread *t = ss_me;
    /* A thread the flusher gave a node when the window opened, before the thread adopted it:
     * the timer's value names it (its pc only: no stack of a thread we know nothing of yet). */
    if (!t && si->si_code == SI_TIMER && ss_paused && ss_is_thread_record(si->si_value.sival_ptr)) {
        struct ss_thread *c = si->si_value.sival_ptr;
        if (__atomic_load_n(&c->covered, __ATOMIC_ACQUIRE) && c->rec.tid == (uint32_t)syscall(SYS_gettid)) t = c;
    }
    if (t && t->sampler.cpu_ring && si->si_code == SI_TIMER && si->si_value.sival_ptr == t) {
        const ucontext_t *uc = ucv;
        uint64_t cpu = ss_self_cpu_ns();
        uint64_t last = __atomic_load_n(&t->sampler.last_cpu_ns, __ATOMIC_RELAXED);
        uint64_t weight = cpu > last ? cpu - last : 0;
        __atomic_store_n(&t->sampler.last_cpu_ns, cpu, __ATOMIC_RELAXED);
        struct ss_sample s = {0};
        s.mono_ns = ss_mono_ns();
        s.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
        s.weight_us = (uint32_t)((weight + 500) / 1000);
        s.kind = SS_SAMPLE_CPU;
        /* A sample that lands on a `syscall` instruction (a futex wait the signal interrupted,
         * restarted once the handler returns) or right after one (the call just returned) has the
         * call's first argument in RDI: for a futex, the lock word's address. Stored as it is, for
         * every sample (no code is read here); the analysis keeps it only at such pcs. */
        s.object = (uint64_t)uc->uc_mcontext.gregs[REG_RDI];
        /* Inside the interposer's own bookkeeping (ss_self SS_NO_THREAD) the unwinder may be
         * running already: the sample keeps its pc alone. Not while glibc walks the heap for a
         * snapshot (none of the interposer's code is running): that stack shows the profiler's
         * own work. */
        if ((ss_walking_heap || (ss_self == t && !ss_busy)) && ss_stacks_on) {
            int was_busy = ss_busy; /* the guard's end clears it: the snapshot had it set */
            SS_GUARD_BEGIN(saved);
            s.stack = ss_stack_of_signal(s.pc, (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
                                         (uint64_t)uc->uc_mcontext.gregs[REG_RBP]);
            SS_GUARD_END(saved);
            ss_busy = was_busy;
        }
        if (ss_ring_push(t->sampler.cpu_ring, SS_CPU_RING, &t->sampler.cpu_head, &t->sampler.cpu_tail, &s))
            __atomic_fetch_add(&ss_cpu_samples, 1, __ATOMIC_RELAXED);
        if (!(t->rec.flags & SS_THREAD_MAIN)) ss_let_main_take_process_signals(sig);
    } else if (si->si_code == SI_TIMER && (ss_paused || ss_is_thread_record(si->si_value.sival_ptr))) {
        /* (In a paused process, also a timer of a window that closed: its node is off the list.) */
        /* One of our timers, but not this thread's current one (a timer deleted while its signal
         * was pending): ours to drop, never the program's to see. */
    } else {
        /* Not one of the timers' signals (kill, setitimer, another process): the program has no
         * handler for this signal (it would have made sampling step aside), so without stallscope
         * the default action would happen. Let it: restore the default and send it again; it
         * arrives as soon as this handler returns. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        __atomic_store_n(&ss_sample_signal, 0, __ATOMIC_RELEASE);
        ss_real_sigaction(sig, &dfl, NULL);
        syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
    }
    errno = saved_errno;
}

static int ss_install_handler(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ss_on_cpu_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask); /* nothing nests inside it */
    return ss_real_sigaction(sig, &sa, NULL);
}

static int ss_signal_is_free(int sig) {
    struct sigaction old;
    if (ss_real_sigaction(sig, NULL, &old) != 0) return 0;
    return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

/* A real-time signal nobody handles, from the top (programs that use them tend to start at SIGRTMIN). */
static int ss_free_rt_signal(int except) {
    for (int sig = SIGRTMAX; sig >= SIGRTMIN + 2; sig--)
        if (sig != except && ss_signal_is_free(sig)) return sig;
    return 0;
}

static int ss_timer_create(struct ss_thread *t, int sig) {
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = sig;
    sev.sigev_value.sival_ptr = t;
    sev._sigev_un._tid = (pid_t)t->rec.tid;
    clockid_t clock = ss_thread_clock((pid_t)t->rec.tid); /* any thread can arm it */
    int id = -1;
    if (syscall(SYS_timer_create, clock, &sev, &id) != 0) return -1;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(ss_cpu_interval_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(ss_cpu_interval_ns % 1000000000ull);
    its.it_value = its.it_interval;
    if (syscall(SYS_timer_settime, id, 0, &its, NULL) != 0) {
        syscall(SYS_timer_delete, id);
        return -1;
    }
    t->sampler.timer = id;
    __atomic_store_n(&t->sampler.has_timer, 1, __ATOMIC_RELEASE);
    return 0;
}

static int ss_sched_read(struct ss_thread *t, const char *stat_fields, struct ss_sched_totals *out);

SS_TLS int ss_attach_untimed;

void ss_sampler_thread_start(struct ss_thread *t) {
    ss_me = t; /* its part was reset with its node (ss_sampler_thread_reset): rings empty, no timer */
    /* A new thread's figures count from its creation (the run-queue delay before its first
     * instruction is part of its life); the main thread's from now, as its record does. */
    /* (Not for a thread attached only for its process's final flush: no flusher looks at it.) */
    if ((t->rec.flags & SS_THREAD_MAIN) && ss_config.wall_hz && !ss_attach_untimed)
        ss_sched_read(t, NULL, &t->sampler.sched_last);
    t->sampler.last_cpu_ns = ss_self_cpu_ns();
    t->sampler.last_wall_ns = ss_mono_ns();
    t->sampler.last_wall_cpu_ns = t->sampler.last_cpu_ns;
    t->sampler.last_wall.mono_ns = 0;
    if (!t->sampler.cpu_ring || ss_attach_untimed) return;
    int sig = __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE);
    if (sig && ss_timer_create(t, sig) != 0) __atomic_or_fetch(&ss_sampling_flags, SS_SAMPLING_NO_TIMERS, __ATOMIC_RELAXED);
}

void ss_sampler_thread_end(struct ss_thread *t) {
    if (__atomic_exchange_n(&t->sampler.has_timer, 0, __ATOMIC_ACQ_REL)) syscall(SYS_timer_delete, t->sampler.timer);
}

/* The program installs a disposition for the signal the timers use: move every timer to another
 * signal before the program's disposition takes effect. */
static void ss_step_aside(int sig) {
    int next = ss_free_rt_signal(sig);
    if (next && ss_install_handler(next) != 0) next = 0;
    __atomic_store_n(&ss_sample_signal, next, __ATOMIC_RELEASE);
    ss_moved_from = sig;
    ss_sampling_flags |= SS_SAMPLING_MOVED | (next ? 0 : SS_SAMPLING_NO_SIGNAL);
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (!__atomic_exchange_n(&t->sampler.has_timer, 0, __ATOMIC_ACQ_REL)) continue;
        syscall(SYS_timer_delete, t->sampler.timer);
        if (next && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SS_NODE_LIVE && !ss_stale(t) &&
            (!ss_paused || __atomic_load_n(&ss_window_open, __ATOMIC_ACQUIRE)))
            ss_timer_create(t, next);
    }
}

SS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    ss_ensure_resolved();
    int ours = sig > 0 && sig == __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE);
    if (ours && !act && old) { /* what the program would see without us */
        memset(old, 0, sizeof *old);
        old->sa_handler = SIG_DFL;
        return 0;
    }
    if (ours) ss_step_aside(sig);
    return ss_real_sigaction(sig, act, old);
}

SS_EXPORT __sighandler_t signal(int sig, __sighandler_t handler) {
    ss_ensure_resolved();
    if (sig > 0 && sig == __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE)) ss_step_aside(sig);
    return ss_real_signal(sig, handler);
}

void ss_sampler_init(void) {
    ss_cpu_interval_ns = ss_config.cpu_hz ? 1000000000ull / ss_config.cpu_hz : 0;
    ss_wall_interval_ns = ss_config.wall_hz ? 1000000000ull / ss_config.wall_hz : 0;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz > 0 && hz <= 1000000) ss_clock_tick_us = 1000000ull / (uint64_t)hz;
    if (!ss_config.cpu_hz || !ss_real.sigaction) return;
    int sig = ss_signal_is_free(SIGPROF) ? SIGPROF : ss_free_rt_signal(0);
    if (sig != SIGPROF) {
        ss_moved_from = SIGPROF;
        ss_sampling_flags |= SS_SAMPLING_MOVED;
    }
    if (!sig || ss_install_handler(sig) != 0) {
        ss_sampling_flags |= SS_SAMPLING_NO_SIGNAL;
        return;
    }
    __atomic_store_n(&ss_sample_signal, sig, __ATOMIC_RELEASE);
}

SS_FORK_TEXT void ss_sampler_after_fork_child(void) {
    ss_cpu_samples = ss_wall_samples = ss_dropped_samples = 0;
    ss_last_wall_pass = 0;
    /* Timers are not inherited; the child's thread gets a new one when it is attached again. Its
     * node is zeros already where the kernel wipes it (and writing would give the child its page). */
    if (ss_me && !ss_wipe_works) ss_me->sampler.has_timer = 0;
}

/* This module's steps, walked by the lifecycle (lifecycle.c). */
const struct ss_steps ss_sampler_steps = {.name = "sampler", .on_fork_child = ss_sampler_after_fork_child};

/* ---- wall samples (the flusher thread) ---- */

static size_t ss_read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    return (size_t)n;
}

static const char *ss_skip_field(const char *p) {
    while (*p && *p != ' ') p++;
    while (*p == ' ') p++;
    return p;
}

static uint64_t ss_parse_num(const char *p) { /* decimal, or hexadecimal after 0x */
    uint64_t v = 0;
    if (p[0] == '0' && p[1] == 'x') {
        for (p += 2;; p++) {
            int d = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
            if (d < 0) return v;
            v = v * 16 + (uint64_t)d;
        }
    }
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

#define SS_SCAN_BYTES 2048u
#define SS_SCAN_FRAMES 24u

/* Words near the top of a blocked thread's stack that point into loaded code, after `pc`, into
 * `frames` (SS_SCAN_FRAMES of them at most); returns how many. */
static uint32_t ss_scan_stack(uint64_t sp, uint64_t pc, uint64_t *frames) {
    static uint64_t words[SS_SCAN_BYTES / 8];
    uint32_t n = 0;
    frames[n++] = pc;
    size_t want = SS_SCAN_BYTES;
    ssize_t got = -1;
    while (want >= 256 && got <= 0) { /* near the stack's end a shorter read succeeds */
        struct iovec local = {words, want}, remote = {(void *)(uintptr_t)sp, want};
        got = syscall(SYS_process_vm_readv, ss_pid, &local, 1, &remote, 1, 0);
        want /= 2;
    }
    for (ssize_t i = 0; got > 0 && i < got / 8 && n < SS_SCAN_FRAMES; i++)
        if (ss_modules_contain(words[i])) frames[n++] = words[i];
    return n;
}

/* The scanned stack of a thread found asleep in a system call (`line`: what its syscall file
 * said; `cpu_before`: its CPU time before that read). A thread that woke meanwhile may have run
 * on and written over its stack (log_fsync's worker, back in its loop, read as waiting in
 * fdatasync called from the loop's other call), so the stack is trusted only if the thread did
 * not run since (a long sleep: one clock read) or, after the scan, still sleeps in a call with the
 * same line and a second scan reads the same frames. The line alone cannot tell the same call
 * from the next one made at the same place (a loop), and a flusher preempted between its reads
 * (a loaded machine) gave the thread time to go round the loop and be scanned elsewhere.
 * Otherwise a stack trusted earlier for the same call, pc and stack pointer stands in (a short
 * sleep repeated in a loop), else the sample has no stack: none rather than a wrong one. */
static uint32_t ss_scan_stack_still(struct ss_thread *t, const char *path, const char *line, size_t len,
                                    uint64_t sp, uint64_t pc, uint16_t nr, uint64_t cpu_before) {
    uint64_t frames[SS_SCAN_FRAMES], again_frames[SS_SCAN_FRAMES];
    uint32_t n = ss_scan_stack(sp, pc, frames);
    /* Its Python frames, where it runs CPython: trusted with the scan (it did not run since). */
    static struct ss_py_raw py[SS_PY_MAX_FRAMES];
    uint32_t npy = ss_py_capture_of(t->pthread_id, py, SS_PY_MAX_FRAMES);
    int still = ss_thread_cpu_ns((pid_t)t->rec.tid) == cpu_before;
    if (!still) {
        char again[512];
        still = ss_read_proc(t, SS_PROC_SYSCALL, path, again, sizeof again) == len && memcmp(again, line, len) == 0 &&
                ss_scan_stack(sp, pc, again_frames) == n && memcmp(again_frames, frames, n * sizeof *frames) == 0;
    }
    struct ss_still_stack *seen = t->sampler.still;
    uint32_t k = 0;
    while (k < 4 && !(seen[k].syscall == nr && seen[k].pc == pc && seen[k].sp == sp)) k++;
    if (still) { /* interned only now: a scan not trusted makes no stack */
        if (k == 4) k = t->sampler.still_next++ % 4;
        seen[k] = (struct ss_still_stack){pc, sp, ss_stack_intern_py(frames, n, SS_STACK_KIND_SCAN, py, npy), nr};
        return seen[k].stack;
    }
    return k < 4 ? seen[k].stack : 0;
}

/* A copy of the thread's last wall sample, at `now`, standing for `weight` ns. */
static void ss_wall_push(struct ss_thread *t, const struct ss_sample *like, uint64_t at, uint64_t weight) {
    if (weight < 1000) return; /* under a microsecond: nothing a sample would carry */
    struct ss_sample smp = *like;
    smp.mono_ns = at;
    smp.weight_us = (uint32_t)(weight / 1000);
    if (ss_ring_push(t->sampler.wall_ring, SS_WALL_RING, &t->sampler.wall_head, &t->sampler.wall_tail, &smp))
        __atomic_fetch_add(&ss_wall_samples, 1, __ATOMIC_RELAXED);
}

/* ---- threads that block the sampling signal ----
 * Such a thread (xz's workers block every signal) gets no CPU sample: its timer's signal stays
 * pending. The flusher notices a thread whose CPU time moves without samples, reads its signal
 * mask, and from then on samples its kernel CPU clock instead (kind SS_SAMPLE_KERNEL: the time it
 * ran, without an instruction or stack), until a CPU sample arrives again (it unblocked the
 * signal). The program's masks are never touched: see docs/STATES.md. */

#define SS_SILENT_CPU_NS 20000000ull /* CPU time without a CPU sample before the mask is read */

static uint64_t ss_parse_hex(const char *p) {
    uint64_t v = 0;
    for (;; p++) {
        int d = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
        if (d < 0) return v;
        v = v * 16 + (uint64_t)d;
    }
}

/* Whether thread `tid` blocks signal `sig` (the SigBlk line of its status). */
static int ss_thread_blocks(uint32_t tid, int sig) {
    char path[64], buf[4096];
    struct ss_str s = {path, 0, sizeof path};
    ss_str_cat(&s, "/proc/self/task/");
    ss_str_u64(&s, tid);
    ss_str_cat(&s, "/status");
    if (ss_read_small(path, buf, sizeof buf) == 0) return 0;
    const char *p = strstr(buf, "\nSigBlk:");
    if (!p) return 0;
    for (p += 8; *p == ' ' || *p == '\t'; p++) {}
    return (int)((ss_parse_hex(p) >> (sig - 1)) & 1);
}

static void ss_kernel_clock(struct ss_thread *t, uint64_t now, uint64_t cpu) {
    int sig = __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE);
    if (!sig || !__atomic_load_n(&t->sampler.has_timer, __ATOMIC_ACQUIRE)) return;
    uint32_t head = __atomic_load_n(&t->sampler.cpu_head, __ATOMIC_ACQUIRE);
    if (head != t->sampler.cpu_head_seen) { /* CPU samples arrive: the signal gets through */
        t->sampler.cpu_head_seen = head;
        t->sampler.sig_blocked = 0;
        return;
    }
    uint64_t from = __atomic_load_n(&t->sampler.last_cpu_ns, __ATOMIC_RELAXED);
    if (cpu <= from) return;
    if (!t->sampler.sig_blocked) {
        if (cpu - from < SS_SILENT_CPU_NS || !ss_thread_blocks(t->rec.tid, sig)) return;
        t->sampler.sig_blocked = 1;
        __atomic_or_fetch(&t->rec.flags, SS_THREAD_SIGNAL_BLOCKED, __ATOMIC_RELAXED);
    }
    /* The CPU time since the last sample of either kind; a CPU sample delivered once the thread
     * unblocks the signal then weighs only what came after. */
    __atomic_store_n(&t->sampler.last_cpu_ns, cpu, __ATOMIC_RELAXED);
    struct ss_sample smp = {0};
    smp.mono_ns = now;
    smp.weight_us = (uint32_t)((cpu - from) / 1000);
    smp.kind = SS_SAMPLE_KERNEL;
    if (ss_ring_push(t->sampler.wall_ring, SS_WALL_RING, &t->sampler.wall_head, &t->sampler.wall_tail, &smp))
        __atomic_fetch_add(&ss_cpu_samples, 1, __ATOMIC_RELAXED);
}

/* ---- the kernel's figures per thread (SCHED points) ----
 * schedstat gives the time on a CPU, the time runnable waiting for one, and the times put on a
 * CPU, exactly and without root (it needs CONFIG_SCHED_INFO); stat gives the page faults and the
 * system time. The flusher reads them at each look, so the hooks never pay for them. */


/* Fields 10 (minflt), 12 (majflt) and 15 (stime) of a stat line, from field 3 (the state). */
static void ss_parse_stat_fields(const char *p, struct ss_sched_totals *out) {
    for (int field = 3; *p && field <= 15; field++) {
        if (field == 10) out->minflt = ss_parse_num(p);
        if (field == 12) out->majflt = ss_parse_num(p);
        if (field == 15) out->stime_ticks = ss_parse_num(p);
        p = ss_skip_field(p);
    }
}

/* Reads thread `t`'s cumulative figures (from the thread itself or the flusher: ss_read_proc);
 * `stat_fields` is its stat line from field 3, if the caller has read it. Returns 0 when
 * schedstat could be read. */
static int ss_sched_read(struct ss_thread *t, const char *stat_fields, struct ss_sched_totals *out) {
    char path[64], buf[512];
    struct ss_str s = {path, 0, sizeof path};
    ss_str_cat(&s, "/proc/self/task/");
    ss_str_u64(&s, t->rec.tid);
    size_t base = s.len;
    if (!stat_fields) {
        ss_str_cat(&s, "/stat");
        size_t len = ss_read_proc(t, SS_PROC_STAT, path, buf, sizeof buf), i = len;
        while (i > 0 && buf[i - 1] != ')') i--;
        if (len && i && i + 1 < len) ss_parse_stat_fields(buf + i + 1, out);
        s.len = base;
    } else {
        ss_parse_stat_fields(stat_fields, out);
    }
    ss_str_cat(&s, "/schedstat");
    if (ss_read_proc(t, SS_PROC_SCHEDSTAT, path, buf, sizeof buf) == 0 || buf[0] < '0' || buf[0] > '9') return -1;
    const char *p = buf;
    out->exec_ns = ss_parse_num(p);
    p = ss_skip_field(p);
    out->run_delay_ns = ss_parse_num(p);
    out->switches = ss_parse_num(ss_skip_field(p));
    return 0;
}

static uint32_t ss_u32_delta(uint64_t now, uint64_t before) {
    uint64_t d = now > before ? now - before : 0;
    return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* One look at thread `t`: pushes what changed since the last point. A full ring keeps the last
 * figures unchanged, so the next point carries the difference and nothing is lost. */
static void ss_sched_look(struct ss_thread *t, uint64_t now, const char *stat_fields) {
    struct ss_sched_totals cur = {0};
    if (ss_sched_read(t, stat_fields, &cur) != 0) return;
    const struct ss_sched_totals *last = &t->sampler.sched_last;
    uint32_t h = t->sampler.sched_head, tl = __atomic_load_n(&t->sampler.sched_tail, __ATOMIC_ACQUIRE);
    if (h - tl >= SS_SCHED_RING) return;
    struct ss_sched_point *pt = &t->sampler.sched_ring[h & (SS_SCHED_RING - 1)];
    pt->mono_ns = now;
    pt->exec_ns = cur.exec_ns > last->exec_ns ? cur.exec_ns - last->exec_ns : 0;
    pt->run_delay_ns = cur.run_delay_ns > last->run_delay_ns ? cur.run_delay_ns - last->run_delay_ns : 0;
    pt->minflt = ss_u32_delta(cur.minflt, last->minflt);
    pt->majflt = ss_u32_delta(cur.majflt, last->majflt);
    pt->stime_us = ss_u32_delta(cur.stime_ticks * ss_clock_tick_us, last->stime_ticks * ss_clock_tick_us);
    pt->switches = ss_u32_delta(cur.switches, last->switches);
    t->sampler.sched_last = cur;
    __atomic_store_n(&t->sampler.sched_head, h + 1, __ATOMIC_RELEASE);
}

/* Threads' /proc files kept open by the flusher: each read is one pread instead of an open, a
 * read and a close (the path walk through /proc was half a look's cost, and a third of the
 * flusher's time on four threads that block and wake all the time). Only in a descriptor table of
 * the flusher's own, never in the program's; at most ss_proc_fd_max of them, well under the
 * process's limit on open files (which counts descriptor numbers in every table). A descriptor
 * names the thread, not its number: once the thread is gone the read fails, and a node that a new
 * thread took has another tid; either way it is closed and the file opened again. Only the flusher
 * reads through them (a program thread has the program's table, and reads the plain way). */
#define SS_PROC_FDS_MAX 768u
static uint32_t ss_proc_gen; /* the current flusher's generation (0: none yet) */
static uint32_t ss_proc_open, ss_proc_fd_max;

void ss_sampler_flusher_start(int own_table) {
    ss_proc_gen++;
    ss_proc_open = 0; /* the last flusher's descriptors went with its table */
    /* Room for the flusher's other files (the profile, snapshots, /proc reads not kept): a
     * quarter of the limit, and at least 64 descriptors. */
    struct rlimit rl;
    uint64_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t)rl.rlim_cur : 0;
    uint64_t room = limit > 128 ? limit - (limit / 4 > 64 ? limit / 4 : 64) : 0;
    ss_proc_fd_max = !own_table ? 0 : room < SS_PROC_FDS_MAX ? (uint32_t)room : SS_PROC_FDS_MAX;
}

static size_t ss_read_proc(struct ss_thread *t, enum ss_proc_file f, const char *path, char *buf, size_t cap) {
    struct ss_sampler_thread *s = &t->sampler;
    /* Kept descriptors are in the flusher's table: any other thread reads the plain way. */
    if (!ss_proc_fd_max || !ss_on_flusher()) return ss_read_small(path, buf, cap);
    int mine = s->proc_gen[f] == ss_proc_gen; /* a cache means a flusher: gen >= 1 */
    if (mine && s->proc_fd[f] >= 0) {
        if (s->proc_tid[f] == t->rec.tid) {
            ssize_t n = pread(s->proc_fd[f], buf, cap - 1, 0);
            if (n > 0) {
                buf[n] = 0;
                return (size_t)n;
            }
        }
        close(s->proc_fd[f]);
        s->proc_fd[f] = -1;
        ss_proc_open--;
    }
    if (ss_proc_open >= ss_proc_fd_max) return ss_read_small(path, buf, cap);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = pread(fd, buf, cap - 1, 0);
    if (n <= 0) {
        close(fd);
        return 0;
    }
    buf[n] = 0;
    s->proc_fd[f] = fd;
    s->proc_tid[f] = t->rec.tid;
    s->proc_gen[f] = ss_proc_gen;
    ss_proc_open++;
    return (size_t)n;
}

/* The monotonic time of `tick`, read at `look` (time `now`), no earlier than the interval. */
static uint64_t ss_wall_before(uint64_t now, uint64_t interval, uint64_t look, uint64_t tick) {
    uint64_t ago = tick && look > tick ? ss_ticks_to_ns(look - tick) : 0;
    return now - (ago < interval ? ago : interval);
}

/* Whether wall sample `s` was taken in the last four looks. */
static int ss_wall_lately(const struct ss_sample *s, uint64_t now) {
    return s->mono_ns && now - s->mono_ns <= 4 * ss_wall_interval_ns;
}

/* A thread found running after `weight` ns off the CPU since the last look, `recorded` of them in
 * waits its hooks recorded: those go to the last sample seen inside such a wait, the rest to the
 * last seen outside one; each only if seen lately (docs/STATES.md). Time in waits of one kind is
 * never given to a sample of the other: a thread that alternates a lock wait and a disk flush
 * had its flushes read as lock waits when the whole interval went to the last sample. */
static void ss_wall_reuse(struct ss_thread *t, uint64_t now, uint64_t weight, uint64_t recorded, uint64_t recorded_at) {
    const struct ss_sample *in = &t->sampler.last_recorded, *out = &t->sampler.last_other;
    if (ss_wall_lately(in, now)) ss_wall_push(t, in, recorded_at, recorded);
    if (ss_wall_lately(out, now)) ss_wall_push(t, out, now, weight - recorded);
}

#define SS_LOOKS_DEFERRED 3u

static void ss_wall_sample(struct ss_thread *t, uint64_t now) {
    char path[64], buf[512];
    struct ss_str s = {path, 0, sizeof path};
    ss_str_cat(&s, "/proc/self/task/");
    ss_str_u64(&s, t->rec.tid);
    size_t base = s.len;
    /* The time since the last look, less what the thread ran meanwhile (the CPU samples' part). */
    uint64_t cpu = ss_thread_cpu_ns((pid_t)t->rec.tid);
    uint64_t ran = cpu > t->sampler.last_wall_cpu_ns ? cpu - t->sampler.last_wall_cpu_ns : 0;
    uint64_t interval = now - t->sampler.last_wall_ns;
    /* On a CPU for all but a sixteenth of the time since the last look: it runs, which its CPU
     * samples cover, and its state and kernel figures can wait (its stat is the dearest part of a
     * look: two busy threads' stat and schedstat were 44% of the flusher's time, which a program
     * that keeps every CPU busy pays). Up to SS_LOOKS_DEFERRED looks in a row are left out; the
     * next one weighs the time since the last one taken, as a late look does: no time is lost,
     * only the kernel figures' resolution for a busy thread (a point every four looks). Never
     * before its first point: a thread that ended with none has no kernel figures at all, and
     * its CPU samples, unscaled, left a fifth of a 30 ms worker's life unaccounted (ripgrep).
     * Nor for a thread that blocks the sampling signal: its CPU time is sampled at the looks. */
    if (t->sampler.sched_head && !t->sampler.sig_blocked && t->sampler.looks_deferred < SS_LOOKS_DEFERRED &&
        interval > 0 && ran >= interval - interval / 16) {
        t->sampler.looks_deferred++;
        return;
    }
    t->sampler.looks_deferred = 0;
    ss_str_cat(&s, "/stat");
    size_t len = ss_read_proc(t, SS_PROC_STAT, path, buf, sizeof buf);
    size_t i = len;
    while (i > 0 && buf[i - 1] != ')') i--;
    if (len == 0 || i == 0 || i + 1 >= len) return;
    char state = buf[i + 1];
    uint64_t weight = interval > ran ? interval - ran : 0;
    int idle = cpu == t->sampler.last_wall_cpu_ns && t->sampler.last_wall.mono_ns == t->sampler.last_wall_ns;
    t->sampler.last_wall_ns = now;
    t->sampler.last_wall_cpu_ns = cpu;
    /* The thread's recorded waits since the last look (ss_wait_leave), read before the look's
     * time is published: a wait that ends in between counts from the last look, at the next. */
    uint64_t ended = SS_LOAD(t->waits.ended_ticks), since = SS_LOAD(t->waits.blocked_since);
    uint64_t look = ss_ticks(), last_look = t->sampler.look_ticks;
    SS_STORE(t->sampler.look_ticks, look);
    /* ... and the one it is in, since the last look */
    uint64_t from = since > last_look ? since : last_look, current = since && look > from ? look - from : 0;
    uint64_t recorded = ss_ticks_to_ns(ended - t->sampler.ended_seen + current);
    t->sampler.ended_seen = ended;
    if (recorded > weight) recorded = weight;
    int in_recorded = since != 0;
    /* Where the time split off a look is placed: the end of the last recorded wait, or the start
     * of the one the thread is in (within the interval), so that it falls among the other
     * threads' waits it overlapped rather than at the look. */
    uint64_t last_end = SS_LOAD(t->waits.last_end);
    uint64_t recorded_at = in_recorded ? now : ss_wall_before(now, interval, look, last_end);
    uint64_t other_at = in_recorded ? ss_wall_before(now, interval, look, since) : now;
    if (state == 'Z' || state == 'X') return;
    /* Asleep now and at the last look, and not one nanosecond on a CPU in between: it still
     * sleeps in the same call at the same place, and its kernel figures cannot have moved. The
     * last sample stands for this interval too; the system call, the stack and schedstat are not
     * read again (an idle pool of 64 threads cost the flusher a quarter of a CPU). */
    if (idle && (state == 'S' || state == 'D') && t->sampler.last_wall.state == (uint8_t)state) {
        t->sampler.last_wall.mono_ns = now;
        ss_wall_push(t, &t->sampler.last_wall, now, weight);
        return;
    }
    ss_sched_look(t, now, buf + i + 1);
    ss_kernel_clock(t, now, cpu);
    /* The last wall sample is over (the thread ran or sleeps elsewhere now): kept by the kind of
     * wait it was in. */
    if (t->sampler.last_wall.mono_ns) {
        if (t->sampler.last_wall_recorded) t->sampler.last_recorded = t->sampler.last_wall;
        else t->sampler.last_other = t->sampler.last_wall;
    }
    /* Found running (or woken before its system call could be read), yet off the CPU for most of
     * the interval: a thread that sleeps and wakes many times between two looks. */
    int reuse = ran * 2 < interval && t->sampler.last_wall.mono_ns && ss_wall_lately(&t->sampler.last_wall, now);
    if (state == 'R') {
        if (reuse) ss_wall_reuse(t, now, weight, recorded, recorded_at);
        return; /* otherwise the CPU samples (or the kernel clock's) cover it */
    }
    s.len = base;
    ss_str_cat(&s, "/syscall");
    struct ss_sample smp = {0};
    smp.mono_ns = now;
    smp.weight_us = (uint32_t)(weight / 1000);
    smp.kind = SS_SAMPLE_WALL;
    smp.state = (uint8_t)state;
    /* "nr a1 a2 a3 a4 a5 a6 sp pc", "-1 sp pc" (blocked outside a system call) or "running" */
    size_t got = ss_read_proc(t, SS_PROC_SYSCALL, path, buf, sizeof buf);
    if (got > 0 && buf[0] == 'r') { /* it woke up meanwhile */
        if (reuse) ss_wall_reuse(t, now, weight, recorded, recorded_at);
        return;
    }
    if (got == 0) smp.syscall = (uint16_t)SS_SYSCALL_UNKNOWN; /* unreadable: not "outside a system call" */
    if (got > 0) {
        const char *p = buf;
        int outside = p[0] == '-';
        uint64_t nr = outside ? 0 : ss_parse_num(p);
        p = ss_skip_field(p);
        if (!outside) {
            smp.syscall = (uint16_t)(nr + 1);
            smp.object = ss_parse_num(p); /* a1: a futex's word */
            p = ss_skip_field(p);
            smp.arg = (uint32_t)ss_parse_num(p);
            for (int k = 0; k < 5; k++) p = ss_skip_field(p); /* a2..a6 */
        }
        uint64_t sp = ss_parse_num(p);
        smp.pc = ss_parse_num(ss_skip_field(p));
        if (ss_stacks_on && sp && smp.pc) smp.stack = ss_scan_stack_still(t, path, buf, got, sp, smp.pc, smp.syscall, cpu);
    }
    /* Asleep: the interval's time in waits of the other kind (recorded or not) goes to the last
     * sample seen in one, if lately, and only the rest to this one (a log writer that waits for
     * a lock, then for a disk flush under it, was not in the flush all the time it did not run). */
    const struct ss_sample *other = in_recorded ? &t->sampler.last_other : &t->sampler.last_recorded;
    uint64_t other_ns = in_recorded ? weight - recorded : recorded;
    if (other_ns && ss_wall_lately(other, now)) {
        ss_wall_push(t, other, in_recorded ? other_at : recorded_at, other_ns);
        smp.weight_us = (uint32_t)((weight - other_ns) / 1000);
    }
    t->sampler.last_wall = smp;
    t->sampler.last_wall_recorded = (uint8_t)in_recorded;
    if (ss_ring_push(t->sampler.wall_ring, SS_WALL_RING, &t->sampler.wall_head, &t->sampler.wall_tail, &smp))
        __atomic_fetch_add(&ss_wall_samples, 1, __ATOMIC_RELAXED);
}

#define SS_WALL_PER_PASS 128u

/* Whether the flusher looks at `t`: a program thread with buffers that has not ended. */
static int ss_wall_sampled(const struct ss_thread *t) {
    return t->sampler.wall_ring && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SS_NODE_LIVE;
}

/* Whether a program thread other than main is alive: only such threads' samples read what
 * ss_watch_main finds, and its /proc/TID/status is the dearest file the flusher reads (a single-
 * threaded program's flusher spent 13% of its time on it). */
static int ss_others_live(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (!(__atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE) & SS_THREAD_MAIN) &&
            __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SS_NODE_LIVE)
            return 1;
    return 0;
}

/* The final flush's last look at each live thread's kernel figures (on the flusher, the one that
 * pushes SCHED points). Linux adds a wait for a CPU to run_delay when the thread gets one, so a
 * wait that ended after the last look was in no point: a main thread that waited a second for a
 * CPU on a loaded machine, then only joined its workers and exited, read as blocked that second
 * against schedstat's 990 ms of run-queue delay (states_causes, oversubscribed.c). */
void ss_sampler_last_looks(void) {
    if (!ss_wall_interval_ns || !ss_on_flusher()) return;
    uint64_t now = ss_mono_ns();
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (ss_wall_sampled(t)) ss_sched_look(t, now, NULL);
}

void ss_sampler_tick(void) {
    if (__atomic_load_n(&ss_sample_signal, __ATOMIC_RELAXED) && ss_others_live()) ss_watch_main();
    else __atomic_store_n(&ss_main_tid, 0, __ATOMIC_RELEASE); /* unknown until a tick finds others */
    if (!ss_wall_interval_ns) return;
    uint64_t now = ss_mono_ns();
    if (now - ss_last_wall_pass < ss_wall_interval_ns) return;
    ss_last_wall_pass = now;
    /* At most SS_WALL_PER_PASS threads per pass: with more, each is looked at every `stride`
     * passes, and its next sample weighs the time in between. */
    static uint32_t pass;
    uint32_t live = 0;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        live += ss_wall_sampled(t);
    uint32_t stride = (live + SS_WALL_PER_PASS - 1) / SS_WALL_PER_PASS;
    if (stride == 0) return;
    uint32_t k = 0, phase = pass++ % stride;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (ss_wall_sampled(t) && k++ % stride == phase) ss_wall_sample(t, now);
}

/* ---- writing ---- */

int ss_sampler_write(void) {
    if (!ss_config.cpu_hz && !ss_config.wall_hz) return 0;
    int written = 0;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (!t->sampler.cpu_ring || !t->in_batch) continue; /* a young thread's samples wait in its rings */
        int a = ss_ring_write(ss_out_buf(), t->rec.serial, t->sampler.cpu_ring, SS_CPU_RING, &t->sampler.cpu_head, &t->sampler.cpu_tail);
        int b = a < 0 ? -1 : ss_ring_write(ss_out_buf(), t->rec.serial, t->sampler.wall_ring, SS_WALL_RING, &t->sampler.wall_head, &t->sampler.wall_tail);
        int w = b < 0 ? -1 : ss_waits_write(ss_out_buf(), t->rec.serial, t);
        int c = w < 0 ? -1 : ss_sched_write(ss_out_buf(), t->rec.serial, t);
        if (a < 0 || b < 0 || w < 0 || c < 0) return -1;
        if (a + b + w + c > 0) t->written = 1; /* its serial is in the file now */
        written += a + b;
    }
    struct ss_sampling_record r;
    ss_sampling_now(&r);
    return ss_out_record(SS_REC_SAMPLING, &r, sizeof r, NULL, 0) != 0 ? -1 : written;
}

/* The SAMPLING record as it stands (0 when sampling is off: no record). */
SS_FORK_TEXT int ss_sampling_now(struct ss_sampling_record *r) {
    *r = (struct ss_sampling_record){ss_config.cpu_hz,
                                     ss_config.wall_hz,
                                     __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE),
                                     ss_moved_from,
                                     __atomic_load_n(&ss_sampling_flags, __ATOMIC_RELAXED),
                                     0,
                                     __atomic_load_n(&ss_cpu_samples, __ATOMIC_RELAXED),
                                     __atomic_load_n(&ss_wall_samples, __ATOMIC_RELAXED),
                                     __atomic_load_n(&ss_dropped_samples, __ATOMIC_RELAXED)};
    return ss_config.cpu_hz || ss_config.wall_hz;
}

/* The end of a window (attach.c): every timer of the window's threads is deleted (a signal
 * still pending finds no record that owns it and is dropped by the handler); the threads keep
 * no sampling of ours. */
void ss_sampler_stop_timers(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (__atomic_exchange_n(&t->sampler.has_timer, 0, __ATOMIC_ACQ_REL)) syscall(SYS_timer_delete, t->sampler.timer);
}

/* A new window: its SAMPLING record counts from zero. */
void ss_sampler_window_reset(void) {
    ss_cpu_samples = ss_wall_samples = ss_dropped_samples = 0;
    ss_last_wall_pass = 0;
}

/* A node the flusher made for a thread that existed when the window opened (threads.c): its
 * timer, armed from the flusher (any thread may arm a thread's CPU clock). */
void ss_sampler_cover(struct ss_thread *t) {
    /* A node just made (its part reset by ss_sampler_thread_reset): rings empty, no timer. */
    if (ss_config.wall_hz) ss_sched_read(t, NULL, &t->sampler.sched_last);
    t->sampler.last_cpu_ns = ss_thread_cpu_ns((pid_t)t->rec.tid);
    t->sampler.last_wall_ns = ss_mono_ns();
    t->sampler.last_wall_cpu_ns = t->sampler.last_cpu_ns;
    t->sampler.last_wall.mono_ns = 0;
    if (!t->sampler.cpu_ring) return;
    int sig = __atomic_load_n(&ss_sample_signal, __ATOMIC_ACQUIRE);
    if (sig && ss_timer_create(t, sig) != 0) __atomic_or_fetch(&ss_sampling_flags, SS_SAMPLING_NO_TIMERS, __ATOMIC_RELAXED);
}
