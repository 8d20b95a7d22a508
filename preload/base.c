/* The base every module calls: the real functions (resolved with dlsym), the configuration (the
 * options table, ss_options.def), the clocks and the random intervals of timed calls, the global
 * state, and the helpers that never touch the program's allocator (mappings, formatting, /proc
 * reads). Nothing here names a module: what happens at init, fork, exec, exit and at each of the
 * flusher's ticks is lifecycle.c's, reached through its registration (ss_lifecycle()). */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ss_real ss_real;
struct ss_config ss_config;
int ss_active;
int ss_sandboxed;
int ss_guard_calls = 1;
int ss_use_tsc;
uint64_t ss_ns_per_tick_q32 = 1ull << 32;
uint64_t ss_ticks_per_sec = 1000000000ull;
uint64_t ss_sample_cap_ticks = 50000ull;
/* The first clock pair of the calibration: the base from which the flush works out the rate
 * that turns a wait's ticks into CLOCK_MONOTONIC (ss_tick_clock_now). */
static uint64_t ss_calib_ns, ss_calib_ticks;
SS_FORK_STATE pid_t ss_pid;
/* A fast part that reaches its slow part with it is sent there by one of these fields (see
 * ss_enter in ss_internal.h); nothing else in it is ever read. */
struct ss_thread ss_no_thread = {.locks.nheld = 1, .stacks.bytes_left = SS_NO_THREAD_BYTES_LEFT, .alloc.free_fast_below = 0};
SS_TLS struct ss_thread *ss_self = SS_NO_THREAD;
SS_TLS int ss_busy;

int ss_wipe_works = 1;

/* ---- clocks ---- */

SS_FORK_TEXT uint64_t ss_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

SS_FORK_TEXT uint64_t ss_realtime_ns(void) {
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

/* One reading of both clocks: the TSC read on either side of CLOCK_MONOTONIC, the closest of a
 * few tries (one the thread was preempted or interrupted in is left out). */
static void ss_clock_pair(uint64_t *ns, uint64_t *ticks) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t a = ss_ticks(), n = ss_mono_ns(), b = ss_ticks();
        if (b - a < best) {
            best = b - a;
            *ns = n;
            *ticks = a + (b - a) / 2;
        }
    }
}

/* Calibrate the TSC against CLOCK_MONOTONIC over a short spin; flush records refine it later
 * (ss_tick_clock_now: from a millisecond on). 10 us between two readings each good to some 20 ns
 * is a rate to 0.4%, enough for what the interposer converts (latency buckets of powers of 2,
 * caps) and a few microseconds at most for a conversion before the refinement. The spin is paid
 * by every process at its start (a build's hundreds of compilers), so it is kept this short. */
void ss_calibrate(void) {
    ss_use_tsc = ss_cpu_has_invariant_tsc();
    if (!ss_use_tsc) return;
    uint64_t n0, t0, n1, t1;
    ss_clock_pair(&n0, &t0);
    do ss_clock_pair(&n1, &t1);
    while (n1 - n0 < 10000);
    if (t1 <= t0) {
        ss_use_tsc = 0;
        return;
    }
    ss_calib_ns = n0;
    ss_calib_ticks = t0;
    ss_ticks_per_sec = (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000ull / (n1 - n0));
    ss_ns_per_tick_q32 = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
    ss_sample_cap_ticks = ss_ticks_per_sec / 20000; /* 50 us */
}

/* A clock pair read now, with the rate over everything since the calibration: 10 us gives the
 * rate to 0.4%, which over a second between flushes would put a wait 4 milliseconds off, while
 * two pairs each good to some 20 ns, a millisecond or more apart, give it to 40 ppm or better: a
 * wait converted at most as long after it ended as the process has lived is then placed to under
 * 40 ns. Before a millisecond has passed the calibration's rate is kept (a wait is then less
 * than a millisecond old: a few microseconds off at most). Without a TSC, ticks are nanoseconds already. */
void ss_tick_clock_now(struct ss_tick_clock *c) {
    if (!ss_use_tsc) {
        c->ns = c->ticks = 0;
        c->ns_per_tick_q32 = 0;
        return;
    }
    ss_clock_pair(&c->ns, &c->ticks);
    c->ns_per_tick_q32 = ss_ns_per_tick_q32;
    if (c->ns > ss_calib_ns + 1000000ull && c->ticks > ss_calib_ticks)
        c->ns_per_tick_q32 = (uint64_t)(((unsigned __int128)(c->ns - ss_calib_ns) << 32) / (c->ticks - ss_calib_ticks));
}

uint64_t ss_tick_clock_mono(const struct ss_tick_clock *c, uint64_t ticks) {
    if (!c->ns_per_tick_q32) return ticks;
    if (ticks >= c->ticks) return c->ns + (uint64_t)(((unsigned __int128)(ticks - c->ticks) * c->ns_per_tick_q32) >> 32);
    uint64_t ago = (uint64_t)(((unsigned __int128)(c->ticks - ticks) * c->ns_per_tick_q32) >> 32);
    return c->ns > ago ? c->ns - ago : 0;
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

uint32_t ss_next_interval_of(struct ss_thread *t, uint32_t period) { return ss_draw_interval(t, period); }
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

void ss_read_config(void) {
    ss_copy_option(ss_config.dir, sizeof ss_config.dir, SS_OPT_DIR);
    ss_copy_option(ss_config.index, sizeof ss_config.index, SS_OPT_INDEX);
    const char *timing = ss_option_text(SS_OPT_TIMING);
    ss_config.timing = (timing && strcmp(timing, "exact") == 0) ? SS_TIMING_EXACT : SS_TIMING_SAMPLED;
    ss_config.period = (uint32_t)ss_option_num(SS_OPT_TIMING_PERIOD);
    if (ss_config.timing == SS_TIMING_EXACT) ss_config.period = 1;
    /* A period given is kept throughout; the default one lengthens where a thread's calls have
     * given enough samples (struct ss_alloc_thread). */
    ss_config.timed_before_longer = ss_config.timing == SS_TIMING_EXACT || ss_option_text(SS_OPT_TIMING_PERIOD) ||
                                            (uint64_t)ss_config.period * SS_TIMING_LONGER_FACTOR > UINT32_MAX / 2
                                        ? 0
                                        : (uint32_t)ss_option_num(SS_OPT_TIMING_LONGER);
    /* Allocator calls and lock holds share one period, 256 by default (files say so by leaving
     * SS_PROCESS_LOCK_PERIOD out; docs/FORMAT.md, "Sampled timing"). */
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
    ss_config.continuous = ss_config.paused && ss_option_flag(SS_OPT_CONTINUOUS);
}

/* ---- symbol resolution ---- */

typedef long (*ss_syscall_fn)(long, ...);
static ss_syscall_fn ss_own_syscall; /* the C library's syscall(), for ss_futex_own */

/* Where a hook's call goes. Preloaded, the interposer comes first in the global scope: the next
 * definition after it (RTLD_NEXT). Loaded into a running process by attach (a dlopen of its own,
 * outside the global scope), the definition the program's own calls are already bound to: the
 * global scope's first (RTLD_DEFAULT), which is the program's allocator where it links one
 * (redis-server's libjemalloc), where RTLD_NEXT from here would be the C library's and its PLT
 * slots, holding jemalloc's functions, could never be pointed at the hooks (got.c). */
static int ss_resolve_global;

void *ss_real_sym(const char *name, const char *version) {
    void *scope = ss_resolve_global ? RTLD_DEFAULT : RTLD_NEXT;
    void *p = version ? dlvsym(scope, name, version) : NULL;
    return p ? p : dlsym(scope, name);
}


/* The path of the loaded object whose segments hold `addr` ("" for the program itself), or NULL.
 * Not dladdr: it also looks for the nearest symbol, a walk of every symbol of the object (the C
 * library's 3,000), about 20 us a call here, and the start-up asks a dozen times. A loaded object's
 * name stays while it is loaded. */
struct ss_object_query {
    uintptr_t addr;
    const char *path;
};

static int ss_object_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct ss_object_query *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr - lo < ph->p_memsz) {
            q->path = info->dlpi_name ? info->dlpi_name : "";
            return 1;
        }
    }
    return 0;
}

const char *ss_object_path(const void *addr) {
    struct ss_object_query q = {(uintptr_t)addr, NULL};
    if (addr) dl_iterate_phdr(ss_object_cb, &q);
    return q.path;
}

int ss_in_libc(const void *fn) {
    const char *path = ss_object_path(fn);
    return path && (strstr(path, "/libc.so") || strstr(path, "/libpthread.so"));
}

void ss_resolve(void) {
    struct ss_real r;
    memset(&r, 0, sizeof r);
    ss_resolve_global = ss_loaded_by_attach();
#define SS_RESOLVE(field, name) *(void **)&r.field = ss_real_sym(name, NULL)
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
    *(void **)&r.cond_wait = ss_real_sym("pthread_cond_wait", "GLIBC_2.3.2");
    *(void **)&r.cond_timedwait = ss_real_sym("pthread_cond_timedwait", "GLIBC_2.3.2");
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
    SS_RESOLVE(execveat, "execveat"); /* glibc 2.34 and later; NULL before */
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
    SS_RESOLVE(prctl, "prctl");
    SS_RESOLVE(libc_start_main, "__libc_start_main");
#undef SS_RESOLVE
    /* Here, while the process has no thread of ours: looked up later, by the flusher's first wait
     * or a final flush, dlsym took the loader's lock while single.c kept glibc's single-threaded
     * flag, and both threads took it with plain stores, no wake-up: a pyenv shim's `env` hung in
     * exec, one run in four, its main thread asleep on the loader's lock nobody held. */
    __atomic_store_n(&ss_own_syscall, (ss_syscall_fn)dlsym(RTLD_NEXT, "syscall"), __ATOMIC_RELEASE);
    /* Publish field by field: another thread may read a pointer as soon as it is non-NULL. */
    void **src = (void **)&r, **dst = (void **)&ss_real;
    for (size_t i = 0; i < sizeof r / sizeof(void *); i++) __atomic_store_n(&dst[i], src[i], __ATOMIC_RELEASE);
}

/* ---- memory and formatting helpers that never touch the program's allocator ---- */

void *ss_map(size_t size) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The wiped memory (nodes, stack and unwind tables, output buffers) is carved from one reservation,
 * so that it is one mapping: fork copies each mapping of a process and a child unmaps each at exit,
 * about 1.5-2 us a fork for each (docs/PERFORMANCE.md, Fork children). The reservation holds what
 * a process maps at start-up (about 20 MiB, most of it the stack tables, as when they were
 * mapped one by one) and a dozen more threads' nodes; what does not fit is mapped on its own.
 * Pages are touched as they are used; a block given back is emptied (MADV_DONTNEED), its
 * addresses not reused. */
#define SS_WIPED_ARENA (24ul << 20)
static char *ss_wiped_arena;
static size_t ss_wiped_used;
static int ss_wiped_arena_refused; /* the reservation failed (an address-space limit): not retried */

static void ss_mark_wiped(void *p, size_t size) {
    if (madvise(p, size, MADV_WIPEONFORK) != 0) ss_wipe_works = 0; /* before Linux 4.14 */
}

static void *ss_map_wiped_alone(size_t size) {
    void *p = ss_map(size);
    if (p) ss_mark_wiped(p, size);
    return p;
}

static int ss_in_wiped_arena(const void *p) {
    const char *a = __atomic_load_n(&ss_wiped_arena, __ATOMIC_ACQUIRE);
    return a && (const char *)p >= a && (const char *)p < a + SS_WIPED_ARENA;
}

void ss_unmap(void *p, size_t size) {
    if (ss_in_wiped_arena(p)) madvise(p, size, MADV_DONTNEED);
    else munmap(p, size);
}

void *ss_map_wiped(size_t size) {
    char *a = __atomic_load_n(&ss_wiped_arena, __ATOMIC_ACQUIRE);
    if (!a && !__atomic_load_n(&ss_wiped_arena_refused, __ATOMIC_RELAXED)) {
        char *fresh = mmap(NULL, SS_WIPED_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (fresh == MAP_FAILED) {
            fresh = NULL;
            __atomic_store_n(&ss_wiped_arena_refused, 1, __ATOMIC_RELAXED);
        } else {
            ss_mark_wiped(fresh, SS_WIPED_ARENA);
            /* Touched a page at a time, sparsely (hash tables): never backed by huge pages. */
            madvise(fresh, SS_WIPED_ARENA, MADV_NOHUGEPAGE);
        }
        if (fresh) {
            char *none = NULL;
            if (__atomic_compare_exchange_n(&ss_wiped_arena, &none, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                a = fresh;
            else {
                munmap(fresh, SS_WIPED_ARENA);
                a = none;
            }
        }
    }
    size_t pages = (size + 4095) & ~(size_t)4095;
    if (a && pages <= SS_WIPED_ARENA) {
        size_t at = __atomic_fetch_add(&ss_wiped_used, pages, __ATOMIC_RELAXED);
        if (at + pages <= SS_WIPED_ARENA) return a + at;
    }
    return ss_map_wiped_alone(size);
}

SS_FORK_TEXT void ss_str_cat(struct ss_str *s, const char *text) {
    while (*text && s->len + 1 < s->cap) s->p[s->len++] = *text++;
    s->p[s->len] = 0;
}

SS_FORK_TEXT void ss_str_u64(struct ss_str *s, uint64_t v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n > 0 && s->len + 1 < s->cap) s->p[s->len++] = digits[--n];
    s->p[s->len] = 0;
}

uint64_t ss_parse_u64(const char *text, uint64_t fallback) {
    if (!text || !*text) return fallback;
    uint64_t v = 0;
    for (; *text; text++) {
        if (*text < '0' || *text > '9') return fallback;
        v = v * 10 + (uint64_t)(*text - '0');
    }
    return v;
}

/* Calls fn(n, ctx) for each entry of the directory `dir` (a /proc listing), with the entry's name
 * read as a number (UINT64_MAX: not one), until fn returns 0. System calls only: no allocation,
 * no stdio (opendir would allocate). */
void ss_each_dir_number(int dir, int (*fn)(uint64_t n, void *ctx), void *ctx) {
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n <= 0) return;
        for (long off = 0; off < n;) {
            struct {
                uint64_t ino;
                int64_t off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            off += d->reclen;
            if (!fn(ss_parse_u64(d->name, UINT64_MAX), ctx)) return;
        }
    }
}

/* A whole small file (/proc), read with system calls only. */
size_t ss_read_file(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t len = 0;
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    close(fd);
    return len;
}

/* ---- the process's state that every layer reads ----
 *
 * Set by the layers above (lifecycle.c, attach.c), read by the hooks and services below them:
 * kept here so that no lower file names a higher one. */

/* Windows of recording (attach.c): the number stamped on the nodes of the open window, whether
 * the process was started paused, whether a window is open, whether attach loaded us. */
uint32_t ss_window;
int ss_paused;
int ss_window_open;
int ss_injected;
SS_TLS struct ss_thread *ss_me; /* the calling thread's record; unlike ss_self never cleared by the guard */
SS_FORK_STATE struct ss_thread *ss_threads; /* every node, pushed with CAS, never removed (threads.c) */
size_t ss_fast_bytes;                       /* small mallocs below it are counted by count (alloc.c) */
SS_FORK_STATE int ss_fork_child;            /* this process is a fork child of the profiled one (lifecycle.c) */
enum ss_start_state ss_start_state;         /* how far the interposer's start has come (lifecycle.c) */
SS_FORK_STATE uint64_t ss_child_flusher_due; /* when a fork child that lives on starts its flusher (0: not pending) */

/* A node of another window (attach.c): the calling thread drops it, for good. */
struct ss_thread *ss_drop_stale(void) {
    struct ss_thread *self = ss_self, *me = ss_me;
    ss_self = SS_NO_THREAD;
    ss_me = NULL;
    /* After the pointers are cleared (a sample taken in between writes no more into it): the
     * flusher may now give the node to another thread. */
    if (self && self != SS_NO_THREAD && ss_stale(self)) __atomic_store_n(&self->released, 1, __ATOMIC_RELEASE);
    if (me && me != self && ss_stale(me)) __atomic_store_n(&me->released, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* The lifecycle's entries (lifecycle.c), as the layers below it reach them: the start on the
 * first call, a thread's node at its first hooked call. */
SS_FORK_TEXT void ss_ensure_resolved(void) {
    if (SS_UNLIKELY(__atomic_load_n(&ss_start_state, __ATOMIC_ACQUIRE) == SS_UNINIT)) ss_lifecycle()->start();
}

struct ss_thread *ss_enter_slow(void) {
    if (ss_busy) return NULL;
    ss_ensure_resolved();
    if (__atomic_load_n(&ss_start_state, __ATOMIC_ACQUIRE) != SS_READY) return NULL;
    /* The common ways out, without the lifecycle: not recording, or a thread that has its record
     * (after a stale one is dropped). A paused fork child whose flusher is due goes there. */
    if (SS_LIKELY(!(ss_paused && ss_child_flusher_due))) {
        if (!__atomic_load_n(&ss_active, __ATOMIC_ACQUIRE)) return NULL;
        if (ss_self != SS_NO_THREAD && ss_stale(ss_self)) ss_drop_stale();
        if (ss_self != SS_NO_THREAD) return ss_self;
    }
    return ss_lifecycle()->enter();
}

/* ---- the C library's syscall() for the interposer's own futex calls ---- */


/* The interposer's own futex calls (the flusher's hand-overs: ready, left, the final flush)
 * through the real syscall(), never futex.c's hook: a thread waiting for the flusher is not a
 * wait of the program's (memcached's main showed "waited for an unknown thread on futex word
 * ss_flusher_ready" after its setuid, which pauses and restarts the flusher). */
long ss_futex_own(uint32_t *word, int op, uint32_t val, const struct timespec *timeout) {
    ss_syscall_fn f = __atomic_load_n(&ss_own_syscall, __ATOMIC_ACQUIRE);
    if (SS_UNLIKELY(f == NULL)) {
        f = (ss_syscall_fn)dlsym(RTLD_NEXT, "syscall");
        __atomic_store_n(&ss_own_syscall, f, __ATOMIC_RELEASE);
    }
    return f(SYS_futex, (long)word, (long)op, (long)val, (long)timeout, 0L, 0L);
}

#if !defined(__x86_64__)
/* ss_futex_quiet's system call where it is not inline (ss_internal.h): through the C library's
 * syscall(), not futex.c's hook, errno unchanged. */
long ss_futex_quiet_call(int *word, int op, int val) {
    int saved = errno;
    long rc = ss_futex_own((uint32_t *)word, op, (uint32_t)val, NULL);
    if (rc < 0) rc = -errno;
    errno = saved;
    return rc;
}
#endif

/* ---- how the interposer was loaded ---- */


/* Whether this library was opened under the name attach gives it (a link to it, so that a
 * preloaded copy is never taken for one). */
int ss_loaded_by_attach(void) {
    Dl_info info;
    if (!dladdr((void *)ss_loaded_by_attach, &info) || !info.dli_fname) return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, SS_INJECT_NAME, strlen(SS_INJECT_NAME)) == 0;
}

/* When the process began, on the monotonic clock: its start in /proc/self/stat (clock ticks
 * since boot) against the boot clock now. */
uint64_t ss_process_began_ns(void) {
    char stat[1024];
    size_t len = ss_read_file("/proc/self/stat", stat, sizeof stat - 1);
    stat[len] = 0;
    char *p = strrchr(stat, ')');
    uint64_t now = ss_mono_ns();
    if (!p) return now;
    p++;
    for (int field = 3; field < 22 && *p; field++) { /* skips fields 3 to 21: then 22, starttime */
        while (*p == ' ') p++;
        while (*p && *p != ' ') p++;
    }
    while (*p == ' ') p++;
    uint64_t ticks = 0;
    for (; *p >= '0' && *p <= '9'; p++) ticks = ticks * 10 + (uint64_t)(*p - '0');
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot;
    if (!ticks || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return now;
    uint64_t boot_ns = (uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec;
    uint64_t start_boot_ns = ticks * (1000000000ull / (uint64_t)hz);
    uint64_t age = boot_ns > start_boot_ns ? boot_ns - start_boot_ns : 0;
    return now > age ? now - age : now;
}
