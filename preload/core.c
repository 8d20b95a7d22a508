/* Initialisation, configuration, clocks, thread registry, and the process-lifecycle hooks
 * (pthread_create, fork, exec, exit). */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct ss_real ss_real;
struct ss_config ss_config;
int ss_active;
int ss_guard_calls = 1;
int ss_use_tsc;
uint64_t ss_ns_per_tick_q32 = 1ull << 32;
uint64_t ss_ticks_per_sec = 1000000000ull;
uint64_t ss_sample_cap_ticks = 50000ull;
SS_FORK_STATE pid_t ss_pid;
/* A fast part that reaches its slow part with it is sent there by one of these fields (see
 * ss_enter in ss_internal.h); nothing else in it is ever read. */
struct ss_thread ss_no_thread = {.nheld = 1, .bytes_left = SS_NO_THREAD_BYTES_LEFT, .free_fast_below = 0};
SS_TLS struct ss_thread *ss_self = SS_NO_THREAD;
SS_TLS int ss_busy;

enum { SS_UNINIT = 0, SS_RESOLVING = 1, SS_READY = 2 };
static int ss_state;
SS_FORK_STATE static int ss_is_fork_child;
SS_FORK_STATE uint64_t ss_child_flusher_due; /* when a fork child that lives on starts its flusher (0: not pending) */
#define SS_CHILD_FLUSHER_DELAY_NS 100000000ull
SS_FORK_STATE static struct ss_thread *ss_fork_pending;
static int ss_exit_status_known;
static int ss_exit_status;

/* ---- clocks ---- */

uint64_t ss_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ss_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int ss_cpu_has_invariant_tsc(void) {
    uint32_t a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u) return 0;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    return (d >> 8) & 1;
}

/* Calibrate the TSC against CLOCK_MONOTONIC over a short spin; flush records refine it later. */
static void ss_calibrate(void) {
    ss_use_tsc = ss_cpu_has_invariant_tsc();
    if (!ss_use_tsc) return;
    uint64_t n0 = ss_mono_ns(), t0 = ss_ticks(), n1, t1;
    do {
        n1 = ss_mono_ns();
        t1 = ss_ticks();
    } while (n1 - n0 < 300000);
    if (t1 <= t0) {
        ss_use_tsc = 0;
        return;
    }
    ss_ticks_per_sec = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull / (n1 - n0));
    ss_ns_per_tick_q32 = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
    ss_sample_cap_ticks = ss_ticks_per_sec / 20000; /* 50 us */
}

/* ---- sampling ---- */

/* A random interval with mean `period`: uniform on [1, 2*period-1]. */
static uint32_t ss_draw_interval(struct ss_thread *t, uint32_t period) {
    if (period <= 1) return 1;
    uint64_t x = t->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    /* Uniform on [1, 2*period-1], mean period: the high 32 bits scaled to the range by a multiply
     * (a division costs tens of cycles; the bias is below 2^-32 per value). */
    return 1 + (uint32_t)(((x >> 32) * (2ull * period - 1)) >> 32);
}

uint32_t ss_next_interval(struct ss_thread *t) { return ss_draw_interval(t, ss_config.period); }
uint32_t ss_next_lock_interval(struct ss_thread *t) { return ss_draw_interval(t, ss_config.lock_period); }

/* ---- configuration ---- */

/* The run options, from the table both stallscope and the interposer read (ss_options.def). */
static const struct {
    const char *env;
    uint64_t fallback, min, max;
} ss_options[SS_OPT_COUNT] = {
#define SS_OPTION(id, env, kind, def, lo, hi, doc) [SS_OPT_##id] = {env, def, lo, hi},
#include "ss_options.def"
#undef SS_OPTION
};

/* From the settings taken out of environ at start (environ.c), not from getenv. */
const char *ss_option_text(enum ss_option id) { return ss_setting(ss_options[id].env); }

uint64_t ss_option_num(enum ss_option id) {
    uint64_t v = ss_parse_u64(ss_option_text(id), ss_options[id].fallback);
    if (v < ss_options[id].min) return ss_options[id].min;
    if (v > ss_options[id].max) return ss_options[id].max;
    return v;
}

int ss_option_flag(enum ss_option id) {
    const char *v = ss_option_text(id);
    return v && v[0] == '1';
}

static void ss_copy_option(char *dst, size_t cap, enum ss_option id) {
    const char *v = ss_option_text(id);
    dst[0] = 0;
    if (!v) return;
    size_t n = strlen(v);
    if (n >= cap) return; /* too long: treated as unset rather than truncated */
    memcpy(dst, v, n + 1);
}

static void ss_read_config(void) {
    ss_copy_option(ss_config.dir, sizeof ss_config.dir, SS_OPT_DIR);
    ss_copy_option(ss_config.index, sizeof ss_config.index, SS_OPT_INDEX);
    const char *timing = ss_option_text(SS_OPT_TIMING);
    ss_config.timing = (timing && strcmp(timing, "exact") == 0) ? SS_TIMING_EXACT : SS_TIMING_SAMPLED;
    ss_config.period = (uint32_t)ss_option_num(SS_OPT_TIMING_PERIOD);
    if (ss_config.timing == SS_TIMING_EXACT) ss_config.period = 1;
    /* Since issue 27 allocator calls and lock holds share one period, 256 by default (files say
     * so by leaving SS_PROCESS_LOCK_PERIOD out; docs/PERFORMANCE.md "Allocator calls on the lock
     * holds' period"). */
    ss_config.lock_period = ss_config.period;
    ss_config.flush_ms = (uint32_t)ss_option_num(SS_OPT_FLUSH_MS);
    ss_config.snapshot_ms = (uint32_t)ss_option_num(SS_OPT_SNAPSHOT_MS);
    ss_config.snapshot_signal = ss_option_flag(SS_OPT_SNAPSHOT_SIGNAL);
    ss_config.stack_bytes = ss_option_num(SS_OPT_STACK_BYTES);
    ss_config.stack_period = (uint32_t)ss_option_num(SS_OPT_STACK_PERIOD);
    ss_config.cpu_hz = (uint32_t)ss_option_num(SS_OPT_SAMPLE_HZ);
    ss_config.wall_hz = (uint32_t)ss_option_num(SS_OPT_WALL_HZ);

    /* The launched process is the one whose parent is the supervisor (also after it execs). */
    uint64_t supervisor = ss_option_num(SS_OPT_SUPERVISOR);
    int is_launched = supervisor != 0 && (uint64_t)ss_parent_pid == supervisor;
    if (is_launched) ss_copy_option(ss_config.output, sizeof ss_config.output, SS_OPT_OUTPUT);
    ss_config.dormant = (ss_option_flag(SS_OPT_NO_CHILDREN) && supervisor != 0 && !is_launched) || ss_settings_lost;
    ss_config.paused = ss_option_flag(SS_OPT_PAUSED);
}

/* ---- symbol resolution ---- */

static void *ss_sym(const char *name) { return dlsym(RTLD_NEXT, name); }

static void *ss_vsym(const char *name, const char *version) {
    void *p = dlvsym(RTLD_NEXT, name, version);
    return p ? p : dlsym(RTLD_NEXT, name);
}

int ss_in_libc(const void *fn) {
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname &&
           (strstr(info.dli_fname, "/libc.so") || strstr(info.dli_fname, "/libpthread.so"));
}

static void ss_resolve(void) {
    struct ss_real r;
    memset(&r, 0, sizeof r);
#define SS_RESOLVE(field, name) *(void **)&r.field = ss_sym(name)
    SS_RESOLVE(malloc, "malloc");
    SS_RESOLVE(calloc, "calloc");
    SS_RESOLVE(realloc, "realloc");
    SS_RESOLVE(reallocarray, "reallocarray");
    SS_RESOLVE(free, "free");
    SS_RESOLVE(posix_memalign, "posix_memalign");
    SS_RESOLVE(aligned_alloc, "aligned_alloc");
    SS_RESOLVE(memalign, "memalign");
    SS_RESOLVE(valloc, "valloc");
    SS_RESOLVE(pvalloc, "pvalloc");
    SS_RESOLVE(malloc_usable_size, "malloc_usable_size");
    SS_RESOLVE(mutex_lock, "pthread_mutex_lock");
    SS_RESOLVE(mutex_trylock, "pthread_mutex_trylock");
    SS_RESOLVE(mutex_timedlock, "pthread_mutex_timedlock");
    SS_RESOLVE(mutex_clocklock, "pthread_mutex_clocklock");
    SS_RESOLVE(mutex_unlock, "pthread_mutex_unlock");
    SS_RESOLVE(rwlock_rdlock, "pthread_rwlock_rdlock");
    SS_RESOLVE(rwlock_tryrdlock, "pthread_rwlock_tryrdlock");
    SS_RESOLVE(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
    SS_RESOLVE(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
    SS_RESOLVE(rwlock_wrlock, "pthread_rwlock_wrlock");
    SS_RESOLVE(rwlock_trywrlock, "pthread_rwlock_trywrlock");
    SS_RESOLVE(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
    SS_RESOLVE(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
    SS_RESOLVE(rwlock_unlock, "pthread_rwlock_unlock");
    SS_RESOLVE(spin_lock, "pthread_spin_lock");
    SS_RESOLVE(spin_trylock, "pthread_spin_trylock");
    SS_RESOLVE(spin_unlock, "pthread_spin_unlock");
    /* The unversioned lookup finds the pre-2.3.2 condition variables; programs use the new ones. */
    *(void **)&r.cond_wait = ss_vsym("pthread_cond_wait", "GLIBC_2.3.2");
    *(void **)&r.cond_timedwait = ss_vsym("pthread_cond_timedwait", "GLIBC_2.3.2");
    SS_RESOLVE(cond_clockwait, "pthread_cond_clockwait");
    SS_RESOLVE(sigaction, "sigaction");
    SS_RESOLVE(signal, "signal");
    SS_RESOLVE(pthread_create, "pthread_create");
    SS_RESOLVE(exit, "exit");
    SS_RESOLVE(underscore_exit, "_exit");
    SS_RESOLVE(underscore_Exit, "_Exit");
    SS_RESOLVE(execve, "execve");
    SS_RESOLVE(execv, "execv");
    SS_RESOLVE(execvp, "execvp");
    SS_RESOLVE(execvpe, "execvpe");
    SS_RESOLVE(fexecve, "fexecve");
    SS_RESOLVE(posix_spawn, "posix_spawn");
    SS_RESOLVE(posix_spawnp, "posix_spawnp");
    SS_RESOLVE(setuid, "setuid");
    SS_RESOLVE(setgid, "setgid");
    SS_RESOLVE(seteuid, "seteuid");
    SS_RESOLVE(setegid, "setegid");
    SS_RESOLVE(setreuid, "setreuid");
    SS_RESOLVE(setregid, "setregid");
    SS_RESOLVE(setresuid, "setresuid");
    SS_RESOLVE(setresgid, "setresgid");
    SS_RESOLVE(setgroups, "setgroups");
    SS_RESOLVE(initgroups, "initgroups");
    SS_RESOLVE(dlclose, "dlclose");
    SS_RESOLVE(libc_start_main, "__libc_start_main");
#undef SS_RESOLVE
    /* Publish field by field: another thread may read a pointer as soon as it is non-NULL. */
    void **src = (void **)&r, **dst = (void **)&ss_real;
    for (size_t i = 0; i < sizeof r / sizeof(void *); i++) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELEASE);
}

/* ---- threads (their nodes: threads.c) ---- */

static void *ss_thread_trampoline(void *arg) {
    struct ss_thread *t = arg;
    void *(*fn)(void *) = t->start_fn;
    void *fn_arg = t->start_arg;
    /* A signal handler may run in this thread before this line (glibc unblocks signals before it
     * calls us), and if it allocates, its call gives the thread a record of its own. From here on
     * such a handler's calls are forwarded unrecorded until the thread has exactly one record:
     * the handler's, if it made one, else the one prepared by pthread_create. */
    ss_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!ss_me) ss_thread_attach(t, 0);
    else ss_thread_free(t); /* never published: nobody else knows it */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ss_busy = 0;
    return fn(fn_arg);
}

SS_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    ss_ensure_resolved();
    struct ss_thread *self = ss_enter();
    if (!self) return ss_real.pthread_create(thread, attr, fn, arg);
    /* Only our own bookkeeping is guarded: what glibc allocates while creating the thread (its
     * DTV, for one) is the program's, and counted like any other call. */
    SS_GUARD_BEGIN(saved);
    struct ss_thread *t = ss_thread_alloc();
    SS_GUARD_END(saved);
    if (!t) return ss_real.pthread_create(thread, attr, fn, arg);
    t->start_fn = fn;
    t->start_arg = arg;
    int rc = ss_real.pthread_create(thread, attr, ss_thread_trampoline, t);
    if (rc != 0) ss_thread_free(t);
    return rc;
}

/* ---- initialisation ---- */

static void ss_after_fork_child(void);

static void ss_init(void) {
    int expected = SS_UNINIT;
    if (!__atomic_compare_exchange_n(&ss_state, &expected, SS_RESOLVING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* another thread initialises; its calls meanwhile go to the bootstrap pool */
    ss_busy = 1;
    ss_resolve();
    /* Loaded into a running process by `stallscope attach` (a dlopen it made the process do):
     * no settings to take, nothing recorded until a window opens (attach.c). */
    ss_injected = ss_loaded_by_attach();
    if (ss_injected) ss_parent_pid = getppid();
    else ss_take_settings();
    ss_read_config();
    if (ss_injected) {
        ss_config.paused = 1;
        ss_config.dormant = 0;
    }
    ss_pid = getpid();
    ss_calibrate();
    ss_writer_init();
    if (ss_injected) ss_process_start_mono_ns = ss_attach_process_start();
    ss_sampler_init();
    ss_locks_init();
    ss_futex_init();
    int ok = ss_real.malloc && ss_real.free && ss_real.pthread_create && ss_real.mutex_lock &&
             ss_real.mutex_trylock && ss_real.mutex_unlock;
    if (ok && !ss_config.dormant) {
        ss_threads_init();
        ok = pthread_atfork(NULL, NULL, ss_after_fork_child) == 0;
        /* Paused (run --paused): no record yet; threads get theirs at their first call in a
         * window that `stallscope attach` opens (attach.c). */
        struct ss_thread *t = ok && !ss_config.paused ? ss_thread_alloc() : NULL;
        ss_guard_calls = !ss_in_libc((void *)ss_real.malloc);
        ss_alloc_init();
        if (ok && ss_config.paused) __atomic_store_n(&ss_paused, 1, __ATOMIC_RELEASE);
        if (t) {
            ss_thread_attach(t, 1);
            __atomic_store_n(&ss_active, 1, __ATOMIC_RELEASE);
        }
    }
    ss_itt_init(ok && !ss_config.dormant && !ss_injected);
    ss_busy = 0;
    __atomic_store_n(&ss_state, SS_READY, __ATOMIC_RELEASE);
}

void ss_ensure_resolved(void) {
    if (SS_UNLIKELY(__atomic_load_n(&ss_state, __ATOMIC_ACQUIRE) == SS_UNINIT)) ss_init();
}

/* The first call of a fork child (or its final flush): the lazy part of the child's set-up, then
 * the record of its one thread. */
static struct ss_thread *ss_adopt_fork_pending(int start_flusher) {
    struct ss_thread *t = ss_fork_pending;
    if (!t) return NULL;
    ss_fork_pending = NULL;
    ss_writer_child_setup();
    ss_thread_child_node(t);
    /* Its flusher starts only if it lives on (most children exec or exit at once). */
    if (start_flusher) __atomic_store_n(&ss_child_flusher_due, ss_mono_ns() + SS_CHILD_FLUSHER_DELAY_NS, __ATOMIC_RELAXED);
    /* A child that made no call we interpose, at its end: no CPU timer for a thread that exits. */
    ss_attach_untimed = !start_flusher;
    ss_thread_attach(t, 1);
    ss_attach_untimed = 0;
    return t;
}

/* Called on the sampled path of allocation calls while a fork child has no flusher yet. */
void ss_child_flusher_check(void) {
    uint64_t due = __atomic_load_n(&ss_child_flusher_due, __ATOMIC_RELAXED);
    if (!due || ss_mono_ns() < due) return;
    if (!__atomic_compare_exchange_n(&ss_child_flusher_due, &due, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    SS_GUARD_BEGIN(saved);
    ss_start_flusher();
    SS_GUARD_END(saved);
}

/* A node of another window (attach.c): the calling thread drops it, for good. */
struct ss_thread *ss_drop_stale(void) {
    ss_self = SS_NO_THREAD;
    ss_me = NULL;
    return NULL;
}

struct ss_thread *ss_enter_slow(void) {
    if (ss_busy) return NULL;
    ss_ensure_resolved();
    if (__atomic_load_n(&ss_state, __ATOMIC_ACQUIRE) != SS_READY) return NULL;
    /* A paused process's fork child listens for attach too, once it lives on. */
    if (SS_UNLIKELY(ss_paused) && ss_child_flusher_due) ss_child_flusher_check();
    if (!__atomic_load_n(&ss_active, __ATOMIC_ACQUIRE)) return NULL;
    if (ss_self != SS_NO_THREAD && ss_stale(ss_self)) ss_drop_stale();
    if (ss_self != SS_NO_THREAD) return ss_self;
    /* Its byte countdown, written by the fast parts of every thread it stands for, is kept far
     * below 0 (a huge request could bring it up). */
    if (SS_UNLIKELY(ss_no_thread.bytes_left > SS_NO_THREAD_BYTES_LEFT / 2))
        SS_STORE(ss_no_thread.bytes_left, SS_NO_THREAD_BYTES_LEFT);
    ss_busy = 1;
    struct ss_thread *t = ss_adopt_fork_pending(1);
    if (!t && ss_paused) t = ss_thread_adopt_covered(); /* a thread the window found running */
    if (!t) { /* a thread not created through pthread_create (or created before we were ready) */
        t = ss_thread_alloc();
        /* In a window, the main thread is met at its first call too. */
        if (t) ss_thread_attach(t, ss_paused && (pid_t)syscall(SYS_gettid) == ss_pid);
    }
    ss_busy = 0;
    return t;
}

/* The final flush of a fork child that made no call we interpose: its thread's record first. */
void ss_attach_pending_for_final(void) { ss_adopt_fork_pending(0); }

/* After fork the child has only the calling thread: start afresh with its record alone. Kept to a
 * few stores (fork's cost is the child's): what the child needs only if it goes on to record or
 * write is set up then (ss_writer_child_setup), and the big tables are zeroed by the kernel
 * (MADV_WIPEONFORK). */
static void ss_after_fork_child(void) {
    if (ss_paused) { /* the child is paused too, whatever its parent was doing: it listens for attach */
        ss_parent_pid = ss_pid;
        ss_pid = getpid();
        ss_is_fork_child = 1;
        ss_self = SS_NO_THREAD;
        ss_me = NULL;
        __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
        ss_config.output[0] = 0;
        ss_writer_after_fork_child();
        ss_sampler_after_fork_child();
        ss_threads_after_fork_child();
        ss_phases_after_fork_child();
        ss_attach_after_fork_child();
        ss_fork_pending = NULL;
        __atomic_store_n(&ss_child_flusher_due, ss_mono_ns() + SS_CHILD_FLUSHER_DELAY_NS, __ATOMIC_RELAXED);
        return;
    }
    if (!ss_active) return;
    ss_parent_pid = ss_pid; /* known now, whatever happens to the parent later */
    ss_pid = getpid();
    ss_is_fork_child = 1;
    struct ss_thread *self = ss_self != SS_NO_THREAD ? ss_self : ss_me;
    ss_self = SS_NO_THREAD;
    if (ss_config.output[0]) ss_config.output[0] = 0; /* the launched process's own path */
    ss_writer_after_fork_child();
    ss_sampler_after_fork_child();
    ss_threads_after_fork_child();
    ss_phases_after_fork_child();
    ss_child_flusher_due = 0;
    ss_fork_pending = self; /* the next hook takes the slow path, which attaches it again */
}

int ss_process_is_fork_child(void) { return ss_is_fork_child; }

/* Whether the calling process may write the profile state it holds: the process it belongs to,
 * or a child made without fork's handlers (raw clone or clone3) that has its own copy of our
 * memory, which is then adopted as fork's handler would have. A child that shares our memory
 * (vfork, CLONE_VM) must never write it: its parent's state is the same memory. */
static int ss_own_process(void) {
    pid_t pid = getpid();
    if (pid == ss_pid) return 1;
    struct ss_thread *t = ss_me;
    int copied;
    if (t && ss_wipe_works) {
        copied = __atomic_load_n(&t->magic, __ATOMIC_RELAXED) != SS_NODE_MAGIC; /* wiped: a copy */
    } else { /* KCMP_VM: 0 when both share one address space; -1 when it cannot tell */
        long same = syscall(SYS_kcmp, pid, ss_pid, 1 /* KCMP_VM */, 0, 0);
        copied = same > 0;
    }
    if (!copied) return 0;
    ss_after_fork_child();
    return 1;
}

__attribute__((constructor)) static void ss_constructor(void) {
    ss_ensure_resolved();
    if (!ss_injected) ss_strip_settings_again();
    if (!ss_active && !ss_paused) return;
    SS_GUARD_BEGIN(saved);
    ss_stacks_init();
    /* The flusher creates the profile in its own descriptor table, and the interposer turns
     * itself off if it cannot. */
    ss_start_flusher();
    if (__atomic_load_n(&ss_active, __ATOMIC_ACQUIRE)) ss_phases_start();
    SS_GUARD_END(saved);
}

__attribute__((destructor)) static void ss_destructor(void) {
    if (!ss_active || !ss_own_process()) return;
    ss_omp_run_close(ss_self_known()); /* its own ring, while it still records into it */
    ss_self = SS_NO_THREAD; /* for good: nothing after the final flush is recorded */
    ss_busy = 1;
    ss_phases_at_exit();
    ss_final_flush(ss_exit_status_known ? SS_END_EXIT : SS_END_DESTRUCTOR, ss_exit_status);
}

/* ---- exit and exec ---- */

static int (*ss_program_main)(int, char **, char **);

static int ss_main_wrapper(int argc, char **argv, char **envp) {
    int status = ss_program_main(argc, argv, envp);
    ss_exit_status = status;
    ss_exit_status_known = 1;
    return status;
}

/* Wrapping main is the only way to learn the status of a plain `return` from main. */
SS_EXPORT int __libc_start_main(int (*main_fn)(int, char **, char **), int argc, char **argv, void (*init)(void),
                                void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    ss_ensure_resolved();
    ss_program_main = main_fn;
    return ss_real.libc_start_main(ss_main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

SS_EXPORT void exit(int status) {
    ss_ensure_resolved();
    ss_exit_status = status;
    ss_exit_status_known = 1;
    ss_real.exit(status);
}

static void ss_before_underscore_exit(int status) {
    if (ss_active && ss_own_process()) { /* never in a vfork child, which shares our memory */
        ss_omp_run_close(ss_self_known());
        ss_self = SS_NO_THREAD;
        ss_busy = 1;
        ss_final_flush(SS_END_UNDERSCORE_EXIT, status);
    }
}

SS_EXPORT void _exit(int status) {
    ss_ensure_resolved();
    ss_before_underscore_exit(status);
    ss_real.underscore_exit(status);
}

SS_EXPORT void _Exit(int status) {
    ss_ensure_resolved();
    ss_before_underscore_exit(status);
    ss_real.underscore_Exit(status);
}

/* exec replaces the image without running destructors: write what this image recorded. If exec
 * fails the process goes on, and later flushes simply follow the END record. `profiled`: the new
 * image records too (else the launched process's profile stays at its path: `env -i prog`). */
static void ss_before_exec(int profiled) {
    ss_ensure_resolved();
    if (ss_active && ss_pid == getpid() && !ss_busy) {
        SS_GUARD_BEGIN(saved);
        ss_omp_run_close(ss_self_known());
        ss_final_flush(SS_END_EXEC, 0);
        if (profiled) ss_writer_before_exec();
        SS_GUARD_END(saved);
    }
}

/* exec returned: the process goes on, and so does its profile. */
static int ss_after_exec_failed(int rc) {
    int saved_errno = errno;
    if (ss_active && ss_pid == getpid()) ss_writer_exec_failed();
    errno = saved_errno;
    return rc;
}

/* Each exec passes the run's settings on when the new image gets our preload (environ.c). */
SS_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 1, path, -1, 0);
    ss_before_exec(env_profiled);
    int rc = ss_real.execve(path, argv, env);
    SS_ENV_RELEASE(envp, env);
    return ss_after_exec_failed(rc);
}

SS_EXPORT int execv(const char *path, char *const argv[]) {
    SS_ENV_FOR_EXEC(environ, env, 1, path, -1, 0);
    ss_before_exec(env_profiled);
    int rc = ss_real.execve(path, argv, env);
    SS_ENV_RELEASE(environ, env);
    return ss_after_exec_failed(rc);
}

SS_EXPORT int execvp(const char *file, char *const argv[]) {
    SS_ENV_FOR_EXEC(environ, env, 1, file, -1, 1);
    ss_before_exec(env_profiled);
    int rc = ss_real.execvpe(file, argv, env);
    SS_ENV_RELEASE(environ, env);
    return ss_after_exec_failed(rc);
}

SS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 1, file, -1, 1);
    ss_before_exec(env_profiled);
    int rc = ss_real.execvpe(file, argv, env);
    SS_ENV_RELEASE(envp, env);
    return ss_after_exec_failed(rc);
}

SS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
    SS_ENV_FOR_EXEC(envp, env, 1, NULL, fd, 0);
    ss_before_exec(env_profiled);
    int rc = ss_real.fexecve(fd, argv, env);
    SS_ENV_RELEASE(envp, env);
    return ss_after_exec_failed(rc);
}

/* The variadic forms collect their arguments on the stack, as glibc does. */
#define SS_COLLECT_ARGS(first, ap, argv, extra)                                                             \
    size_t argc_ = 1;                                                                                       \
    va_start(ap, first);                                                                                    \
    while (va_arg(ap, char *) != NULL) argc_++;                                                             \
    va_end(ap);                                                                                             \
    char *argv[argc_ + 1];                                                                                  \
    argv[0] = (char *)(first);                                                                              \
    va_start(ap, first);                                                                                    \
    for (size_t i_ = 1; i_ <= argc_; i_++) argv[i_] = va_arg(ap, char *);                                   \
    extra;                                                                                                  \
    va_end(ap)

SS_EXPORT int execl(const char *path, const char *arg, ...) {
    va_list ap;
    SS_COLLECT_ARGS(arg, ap, argv, (void)0);
    return execv(path, argv);
}

SS_EXPORT int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    SS_COLLECT_ARGS(arg, ap, argv, (void)0);
    return execvp(file, argv);
}

SS_EXPORT int execle(const char *path, const char *arg, ...) {
    va_list ap;
    char **envp;
    SS_COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
    return execve(path, argv, envp);
}
