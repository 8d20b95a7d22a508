/* The process's life, and what each module does at each step of it: initialisation (the
 * constructor, or the first hooked call), threads (pthread_create), fork, exec, exit (exit,
 * _exit, the destructor, a return from main), the flusher's ticks and the contents of a batch,
 * and the reset of a thread's node (one part per module). The modules never call one another
 * for these: this file calls each. */
#include "ss_hooks.h"
#include "ss_raw.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

SS_FORK_STATE static struct ss_thread *ss_fork_pending;
/* The child was adopted at its end (ss_own_process), not by fork's handler: its thread may
 * have recorded into its node since. */
SS_FORK_STATE static int ss_fork_late;
SS_FORK_STATE static uint64_t ss_last_got; /* the flusher's last pointing of PLT slots at the hooks (0: none yet) */
static int ss_exit_status_known;
static int ss_exit_status;

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
    /* A fork child that starts threads (a pool's worker sizing its own team) lives on: its
     * flusher, and with it the sampler's looks at the threads' run-queue delay, starts now
     * rather than at an allocation made after the delay, which a computing team may never make. */
    if (rc == 0 && SS_UNLIKELY(__atomic_load_n(&ss_child_flusher_due, __ATOMIC_RELAXED))) {
        __atomic_store_n(&ss_child_flusher_due, 1, __ATOMIC_RELAXED);
        ss_child_flusher_check();
    }
    return rc;
}

/* ---- initialisation ---- */

static void ss_after_fork_child(void);

static void ss_init(void) {
    int expected = SS_UNINIT;
    if (!__atomic_compare_exchange_n(&ss_start_state, &expected, SS_RESOLVING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return; /* another thread initialises; its calls meanwhile go to the bootstrap pool */
    ss_busy = 1;
    ss_resolve();
    ss_symbols_init();
    /* Loaded into a running process by `stallscope attach` (a dlopen it made the process do):
     * no settings to take, nothing recorded until a window opens (attach.c). */
    ss_injected = ss_loaded_by_attach();
    if (ss_injected) ss_parent_pid = getppid();
    else ss_take_settings();
    ss_read_config();
    /* Before the set-up's own calls (a CPU timer for this thread, ...), each of which it names. */
    /* The steps of the modules above (sandbox.c: the probe, which never returns). */
    SS_EACH_STEP(step) if (step->on_start) step->on_start();
    if (ss_injected) {
        ss_config.paused = 1;
        ss_config.dormant = 0;
    }
    ss_pid = getpid();
    ss_calibrate();
    ss_writer_init();
    if (ss_injected) ss_process_start_mono_ns = ss_process_began_ns();
    ss_sampler_init();
    ss_locks_init();
    ss_futex_init();
    ss_single_init();
    int ok = ss_real.malloc && ss_real.free && ss_real.pthread_create && ss_real.mutex_lock &&
             ss_real.mutex_trylock && ss_real.mutex_unlock;
    if (ok && !ss_config.dormant) {
        ss_threads_init();
        ok = pthread_atfork(NULL, NULL, ss_after_fork_child) == 0;
        /* Paused (run --paused): no record yet; threads get theirs at their first call in a
         * window that `stallscope attach` opens (attach.c). */
        /* Decided before the first node is made: a node's frees may take their fast part only
         * with glibc's allocator (ss_alloc_thread_reset). */
        ss_guard_calls = !ss_in_libc((void *)ss_real.malloc);
        /* glibc's chunk headers not as expected: read none (glibc_check.c). */
        if (!ss_guard_calls && !ss_glibc_heap_check()) ss_guard_calls = 1;
        ss_alloc_init(); /* before the first node: its small mallocs' bound is ss_fast_bytes */
        struct ss_thread *t = ok && !ss_config.paused ? ss_thread_alloc() : NULL;
        if (ok && ss_config.paused) __atomic_store_n(&ss_paused, 1, __ATOMIC_RELEASE);
        if (t) {
            ss_thread_attach(t, 1);
            __atomic_store_n(&ss_active, 1, __ATOMIC_RELEASE);
        }
    }
    ss_itt_init(ok && !ss_config.dormant && !ss_injected);
    ss_busy = 0;
    __atomic_store_n(&ss_start_state, SS_READY, __ATOMIC_RELEASE);
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
    if (!ss_fork_late) ss_thread_began_at_fork(t, ss_writer_child_start_mono());
    return t;
}

static struct ss_thread *ss_enter_first(void) {
    if (ss_busy) return NULL;
    ss_ensure_resolved();
    if (__atomic_load_n(&ss_start_state, __ATOMIC_ACQUIRE) != SS_READY) return NULL;
    /* A paused process's fork child listens for attach too, once it lives on. */
    if (SS_UNLIKELY(ss_paused) && ss_child_flusher_due) ss_child_flusher_check();
    if (!__atomic_load_n(&ss_active, __ATOMIC_ACQUIRE)) return NULL;
    if (ss_self != SS_NO_THREAD && ss_stale(ss_self)) ss_drop_stale();
    if (ss_self != SS_NO_THREAD) return ss_self;
    /* Its byte countdown, written by the fast parts of every thread it stands for, is kept far
     * below 0 (a huge request could bring it up). */
    if (SS_UNLIKELY(ss_no_thread.stacks.bytes_left > SS_NO_THREAD_BYTES_LEFT / 2))
        SS_STORE(ss_no_thread.stacks.bytes_left, SS_NO_THREAD_BYTES_LEFT);
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
static void ss_attach_pending_for_final(void) { ss_adopt_fork_pending(0); }

/* A fork child that has made no call we interpose (its thread not attached again since fork's
 * handler ran). */
SS_FORK_TEXT static int ss_fork_child_untouched(void) { return ss_fork_pending != NULL && !ss_fork_late; }

/* The modules' steps in a fork child, from their own step structs: those below the lifecycle in
 * the order the child needs (its file first: the child's is not the launched process's; then its
 * sampling, its nodes, its phases), then those above it as they registered (attach.c's listener,
 * in a paused process's child). */
static const struct ss_steps *const ss_steps_below[] = {&ss_writer_steps, &ss_sampler_steps, &ss_threads_steps,
                                                       &ss_phases_steps};

SS_FORK_TEXT static void ss_fork_child_steps(void) {
    for (size_t i = 0; i < sizeof ss_steps_below / sizeof ss_steps_below[0]; i++)
        if (ss_steps_below[i]->on_fork_child) ss_steps_below[i]->on_fork_child();
    SS_EACH_STEP(step) if (step->on_fork_child) step->on_fork_child();
}

/* After fork the child has only the calling thread: start afresh with its record alone. Kept to a
 * few stores (fork's cost is the child's): what the child needs only if it goes on to record or
 * write is set up then (ss_writer_child_setup), and the big tables are zeroed by the kernel
 * (MADV_WIPEONFORK). */
SS_FORK_TEXT static void ss_after_fork_child(void) {
    if (ss_paused) { /* the child is paused too, whatever its parent was doing: it listens for attach */
        ss_parent_pid = ss_pid;
        ss_pid = (pid_t)SS_RAW(SYS_getpid, 0, 0, 0);
        ss_fork_child = 1;
        ss_self = SS_NO_THREAD;
        ss_me = NULL;
        __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
        ss_fork_child_steps();
        ss_fork_pending = NULL;
        ss_last_got = 0;
        __atomic_store_n(&ss_child_flusher_due, ss_mono_ns() + SS_CHILD_FLUSHER_DELAY_NS, __ATOMIC_RELAXED);
        return;
    }
    if (!ss_active) return;
    ss_parent_pid = ss_pid; /* known now, whatever happens to the parent later */
    ss_pid = (pid_t)SS_RAW(SYS_getpid, 0, 0, 0);
    ss_fork_child = 1;
    struct ss_thread *self = ss_self != SS_NO_THREAD ? ss_self : ss_me;
    ss_self = SS_NO_THREAD;
    ss_fork_child_steps();
    ss_child_flusher_due = 0;
    ss_last_got = 0;
    ss_fork_late = 0;
    ss_fork_pending = self; /* the next hook takes the slow path, which attaches it again */
}


/* Whether the calling process may write the profile state it holds: the process it belongs to,
 * or a child made without fork's handlers (raw clone or clone3) that has its own copy of our
 * memory, which is then adopted as fork's handler would have. A child that shares our memory
 * (vfork, CLONE_VM) must never write it: its parent's state is the same memory. */
SS_FORK_TEXT static int ss_own_process(void) {
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
    ss_fork_late = 1;
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
    ss_locks_flush_pending(ss_self_known()); /* its own ring, while it still records into it */
    ss_omp_run_close(ss_self_known());
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

SS_FORK_TEXT static void ss_before_underscore_exit(int status) {
    if (ss_active && ss_own_process()) { /* never in a vfork child, which shares our memory */
        ss_locks_flush_pending(ss_self_known());
        ss_omp_run_close(ss_self_known());
        ss_self = SS_NO_THREAD;
        ss_busy = 1;
        ss_final_flush(SS_END_UNDERSCORE_EXIT, status);
    }
}

SS_FORK_TEXT SS_EXPORT void _exit(int status) {
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
        struct ss_thread *self = ss_self_known(); /* before the guard, which hides it */
        SS_GUARD_BEGIN(saved);
        ss_locks_flush_pending(self);
        ss_omp_run_close(self);
        ss_final_flush(SS_END_EXEC, 0);
        if (profiled) ss_writer_before_exec();
        SS_GUARD_END(saved);
    }
}

/* ---- seccomp sandboxes ---- */

/* The process is about to install a seccomp filter (or enter strict mode), after which any system
 * call the filter does not expect may kill it (SIGSYS). What a filter allows cannot be known
 * before it runs, and the interposer makes calls of its own on the program's threads (the CPU
 * samples' thread clock, getpid at exit, a flush's futex, /proc reads) and in its flusher. So
 * recording ends here, as at exec: the pending records, every CPU timer deleted, a final flush
 * (END how SANDBOX), the flusher gone for good, every record stale (the hooks forward from now
 * on), the hot calls pointed straight at the C library. The process goes on unrecorded; an exec
 * after this starts its image without the interposer (ss_env_room). A thread making a call of
 * ours at this very moment on another CPU is not waited for. */
void ss_before_sandbox(void) {
    ss_ensure_resolved();
    if (ss_busy || __atomic_load_n(&ss_sandboxed, __ATOMIC_ACQUIRE)) return;
    int active = __atomic_load_n(&ss_active, __ATOMIC_ACQUIRE), paused = ss_paused;
    /* Never in a vfork child, which shares our memory with its parent. */
    if (active ? !ss_own_process() : getpid() != ss_pid) return;
    /* Another thread installing its filter at the same moment waits until recording has ended. */
    static int ending;
    if (__atomic_exchange_n(&ending, 1, __ATOMIC_ACQ_REL)) {
        for (int waited_ms = 0; waited_ms < 10000 && !__atomic_load_n(&ss_sandboxed, __ATOMIC_ACQUIRE); waited_ms++) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        return;
    }
    struct ss_thread *self = ss_self_known(); /* before the guard, which hides it */
    SS_GUARD_BEGIN(saved);
    __atomic_store_n(&ss_child_flusher_due, 0, __ATOMIC_RELAXED);
    ss_sampler_stop_timers(); /* a signal still pending is dropped by the handler (sampler.c) */
    if (active) {
        ss_locks_flush_pending(self);
        ss_omp_run_close(self);
        ss_final_flush(SS_END_SANDBOX, 0); /* (a window's too: its flusher closes it as it leaves) */
    }
    ss_flusher_end();
    __atomic_add_fetch(&ss_window, 1, __ATOMIC_ACQ_REL); /* every record is stale from now on */
    __atomic_store_n(&ss_active, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_paused, 0, __ATOMIC_RELEASE);
    ss_sampler_stop_timers(); /* one a thread starting meanwhile made */
    if (active || paused) ss_got_point(SS_GOT_LIBC);
    ss_stacks_on = 0; /* dlclose's look at the loaded objects (stacks.c) */
    __atomic_store_n(&ss_sandboxed, 1, __ATOMIC_RELEASE);
    SS_GUARD_END(saved);
    ss_self = SS_NO_THREAD;
    ss_me = NULL;
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

/* execveat (glibc 2.34 and later; the system call before): the program is `path` relative to the
 * directory `dirfd`, or `dirfd` itself with AT_EMPTY_PATH and an empty path. For the loader check
 * a relative path is reached through /proc/self/fd/DIRFD (into `buf`); NULL: judge `dirfd`. */
static const char *ss_execveat_target(int dirfd, const char *path, int flags, char *buf, size_t cap) {
    if (!path) return NULL;
    if (!path[0]) return (flags & AT_EMPTY_PATH) ? NULL : path;
    if (path[0] == '/' || dirfd == AT_FDCWD) return path;
    struct ss_str s = {buf, 0, cap};
    ss_str_cat(&s, "/proc/self/fd/");
    ss_str_u64(&s, (uint64_t)(unsigned)dirfd);
    ss_str_cat(&s, "/");
    ss_str_cat(&s, path);
    return s.len + 1 < cap ? buf : path;
}

SS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    char where[4200];
    const char *target = ss_execveat_target(dirfd, path, flags, where, sizeof where);
    SS_ENV_FOR_EXEC(envp, env, 1, target, target ? -1 : dirfd, 0);
    ss_before_exec(env_profiled);
    int rc = ss_real.execveat ? ss_real.execveat(dirfd, path, argv, env, flags)
                              : (int)syscall(SYS_execveat, dirfd, path, argv, env, flags);
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

/* ---- the flusher's ticks (writer.c runs the thread; this is what each step does) ---- */

struct ss_alive_scan {
    pid_t self;
    int alive;
};

/* One entry of /proc/self/task: whether that thread, not the caller, is alive (not a zombie). */
static int ss_note_alive(uint64_t tid, void *ctx) {
    struct ss_alive_scan *scan = ctx;
    if (tid == UINT64_MAX || tid == 0 || (pid_t)tid == scan->self) return 1;
    char path[64], stat[512];
    struct ss_str s = {path, 0, sizeof path};
    ss_str_cat(&s, "/proc/self/task/");
    ss_str_u64(&s, tid);
    ss_str_cat(&s, "/stat");
    size_t len = ss_read_file(path, stat, sizeof stat - 1);
    size_t i = len;
    while (i > 0 && stat[i - 1] != ')') i--;
    /* The state follows ") "; a thread that is gone or a zombie does not count. */
    if (len == 0 || i == 0 || i + 1 >= len) return 1;
    if (stat[i + 1] != 'Z' && stat[i + 1] != 'X') scan->alive = 1;
    return !scan->alive;
}

/* Whether any thread other than the caller is still alive (not a zombie). */
static int ss_other_threads_alive(void) {
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return 1;
    struct ss_alive_scan scan = {(pid_t)syscall(SYS_gettid), 0};
    ss_each_dir_number(dir, ss_note_alive, &scan);
    close(dir);
    return scan.alive;
}

/* The main thread called pthread_exit: its record ended while the process goes on. */
static int ss_main_thread_ended(void) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        uint32_t flags = __atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE);
        uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if ((flags & SS_THREAD_MAIN) && (state == SS_NODE_LIVE || state == SS_NODE_ENDED))
            return (flags & SS_THREAD_ENDED) != 0;
    }
    return 0;
}

/* A tick of a paused process's flusher while no window is open (every 100 ms): the process
 * would end but for the flusher when main called pthread_exit and every other thread has gone:
 * end it as glibc would. The hot calls go straight to the C library until a window opens (but
 * for run --push, whose windows follow one another: they keep the hooks); a
 * process attach loaded us into gets the hooks that must stay (sigaction, ...). Once ready (the
 * thread that started us may hold the loader's lock until then: its dlopen), then every second
 * for slots bound and objects loaded since. */
static void ss_flusher_paused_tick(uint32_t idle_ticks) {
    if (idle_ticks % 10 != 0) return;
    if (idle_ticks > 0 && !ss_other_threads_alive()) ss_real.exit(0);
    if (ss_injected || !ss_config.continuous) ss_got_point(ss_injected ? SS_GOT_KEEP : SS_GOT_LIBC);
}

/* A tick of the flusher while recording (as often as wall samples are taken). */
static void ss_flusher_tick(uint64_t now, uint32_t elapsed_ms) {
    /* Loaded by attach: objects loaded and slots bound since get the hooks too. */
    if (ss_injected && now - ss_last_got >= 1000000000ull) {
        ss_last_got = now;
        ss_got_point(SS_GOT_HOOKS);
    }
    /* When the program's last thread has gone after main called pthread_exit, the process
     * would end now but for this thread: end it as glibc would, with exit(0). */
    if (ss_main_thread_ended() && !ss_other_threads_alive()) ss_real.exit(0);
    ss_phases_tick(elapsed_ms);
    if (ss_paused) ss_threads_covered_tick();
    ss_sampler_tick();
    ss_threads_fold_ended();
}

/* What a batch holds from each module, in order, after the samples of folded threads (writer.c
 * assembles and writes it): samples first (every stack they name is complete by now, and
 * written just after), the stack table, cross-thread frees, the threads, the phases. Returns -1
 * when memory ran out. */
static int ss_batch_records(int final, int had_fold_samples) {
    int samples = ss_sampler_write();
    if (samples < 0 || ss_stacks_write(samples > 0 || had_fold_samples, final) != 0 || ss_alloc_write() != 0 ||
        ss_threads_write(final) != 0)
        return -1;
    ss_phases_append_pending();
    return 0;
}

/* A batch begins: the final one's last looks at threads not running, then each thread's state. */
static void ss_batch_begin(int final) {
    if (final) ss_sampler_last_looks();
    ss_threads_prepare_batch(final);
}

/* The steps of the modules above the lifecycle (attach.c), on the flusher's behalf. */
static void ss_steps_listen(void) {
    SS_EACH_STEP(step) if (step->on_flusher_listen) step->on_flusher_listen();
}

static void ss_steps_poll(void) {
    SS_EACH_STEP(step) if (step->on_flusher_poll) step->on_flusher_poll();
}

static void ss_steps_leave(void) {
    SS_EACH_STEP(step) if (step->on_flusher_leave) step->on_flusher_leave();
}

/* ---- objects unloaded ---- */

/* Before an object may be unloaded, the stacks note what is loaded, so that its frames still
 * resolve; after, the unwinder forgets its addresses (they may hold other code from now on) and
 * OpenMP an unloaded runtime's functions, and the stacks note the time of the unload. */
SS_EXPORT int dlclose(void *handle) {
    ss_ensure_resolved();
    ss_stacks_note_modules();
    int (*real)(void *) = ss_real.dlclose;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "dlclose"); /* while another thread initialises */
    int rc = real ? real(handle) : -1;
    if (rc == 0) {
        ss_fast_unwind_forget();
        ss_omp_after_unload();
    }
    ss_stacks_note_modules();
    return rc;
}

/* What the layers below ask of the lifecycle (ss_internal.h, "the layers"). */
SS_LIFECYCLE(ss_lifecycle_entries) = {
    .start = ss_init,
    .enter = ss_enter_first,
    .before_sandbox = ss_before_sandbox,
    .flusher_started = ss_sampler_flusher_start,
    .flusher_listen = ss_steps_listen,
    .flusher_poll = ss_steps_poll,
    .flusher_paused_tick = ss_flusher_paused_tick,
    .flusher_tick = ss_flusher_tick,
    .flusher_woken = ss_threads_fold_ended,
    .flusher_leaving = ss_steps_leave,
    .fork_child_untouched = ss_fork_child_untouched,
    .bare_pending = ss_phases_pending,
    .bare_sampling = ss_sampling_now,
    .bare_thread = ss_thread_bare_record,
    .batch_final_pending = ss_attach_pending_for_final,
    .batch_begin = ss_batch_begin,
    .batch_records = ss_batch_records,
    .batch_end = ss_threads_after_batch,
};
