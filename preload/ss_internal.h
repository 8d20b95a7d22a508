/* Internal declarations of the interposer. Rules for every file here: no allocation through the
 * program's allocator, no locks and no stdio on the hot path, initial-exec TLS only. */
#ifndef STALLSCOPE_INTERNAL_H
#define STALLSCOPE_INTERNAL_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "ss_format.h"

/* Everything declared from here on is the interposer's own (only SS_EXPORT symbols leave the
 * library): with the declarations hidden too, the compiler reaches a global such as ss_real or
 * ss_guard_calls at its own address instead of through the GOT, one load less in every hook. */
#pragma GCC visibility push(hidden)

#define SS_EXPORT __attribute__((visibility("default")))
#define SS_LIKELY(x) __builtin_expect(!!(x), 1)
#define SS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SS_TLS __thread __attribute__((tls_model("initial-exec")))
/* State a fork child writes in fork's handlers or at its exit, kept together (the linker merges
 * the section from every file): each page a child writes is a page the kernel copies for it. */
#define SS_FORK_STATE __attribute__((section("ss_fork_state")))
/* The code a fork child runs between fork and an exit or exec, kept together for the same reason:
 * each page of code a child runs is faulted in again in it. (The linker places .text.hot.* at the
 * start of .text, as one group; this is placement only, not the `hot` attribute.) */
#define SS_FORK_TEXT __attribute__((section(".text.hot.ss_fork")))
/* A hook's slow part, which the hook tail-calls, is named ss_slow_<the symbol it interposes>:
 * its frame stands in for the hook's in a stack, and the symbolizer names it so
 * (src/symbols/mod.rs, SLOW_PART_PREFIX). */
#define SS_NOINLINE __attribute__((noinline))

/* Counters owned by one thread and read by the flusher: relaxed atomics compile to plain
 * loads and stores on x86-64 but keep the concurrent read well defined. */
#define SS_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define SS_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define SS_ADD(x, v) SS_STORE(x, SS_LOAD(x) + (v))
/* The same for a 64-bit counter on the hot path: one read-modify-write instruction (not locked:
 * only its thread writes it) instead of a load, an add and a store. The flusher's relaxed loads
 * see the old value or the new one, as with SS_ADD. */
#if defined(__x86_64__)
#define SS_INC(x, v) __asm__("addq %1, %0" : "+m"(x) : "er"((uint64_t)(v)))
#else
#define SS_INC(x, v) SS_ADD(x, v)
#endif

/* A thread's own countdowns on the hot path, in one instruction each whose flags give the test:
 * `*x -= 1`, whether it reached 0; `*x -= v` (wrapping), whether it went below 0. Only the
 * thread writes them; the flusher never reads them. */
static inline int ss_dec_is_zero(uint32_t *x) {
#if defined(__x86_64__)
    int zero;
    __asm__("subl $1, %0" : "+m"(*x), "=@ccz"(zero));
    return zero;
#else
    return --*x == 0;
#endif
}
static inline int ss_dec_borrows(uint32_t *x) { /* `*x -= 1`, whether it was 0 */
#if defined(__x86_64__)
    int borrow;
    __asm__("subl $1, %0" : "+m"(*x), "=@ccc"(borrow));
    return borrow;
#else
    return (*x)-- == 0;
#endif
}
static inline int ss_sub_is_negative(int64_t *x, size_t v) {
#if defined(__x86_64__)
    int negative;
    __asm__("subq %2, %0" : "+m"(*x), "=@ccs"(negative) : "er"((uint64_t)v));
    return negative;
#else
    *x = (int64_t)((uint64_t)*x - (uint64_t)v);
    return *x < 0;
#endif
}

/* Per-thread lock table: open addressing on the lock's address, plus one overflow slot. */
#define SS_LOCK_SLOTS 256u
#define SS_LOCK_PROBES 8u
#define SS_LOCK_OVERFLOW SS_LOCK_SLOTS
#define SS_HELD_MAX 16u
/* Indexed by enum ss_lock_kind (values 1 to 10): one slot more than the highest value, checked
 * against the list (kind 10, itt-sync, had run past a table of 10 into the next fields). */
#define SS_LOCK_KIND_SLOTS 11u /* also the bound ss_lock_key's 4 bits hold */
#define SS_X(name, value, text) _Static_assert((value) < SS_LOCK_KIND_SLOTS, "SS_LOCK_KIND_SLOTS: " #name);
SS_LOCK_KINDS(SS_X)
#undef SS_X

/* A hold in the timed sample, open until its unlock. */
struct ss_held {
    uintptr_t address;
    uint32_t slot;
    uint64_t start;
};

struct ss_phase_open;
struct ss_buf;

/* A thread's node: its record and buffers. Nodes are on one lock-free list, pushed once and never
 * removed; a node whose thread has ended and whose last state is written (or folded into a group,
 * threads.c) is reset and reused in place, so the list is as long as the most threads that were
 * alive (or ended, not yet written) at once, not as long as the history. */
enum ss_node_state {
    SS_NODE_FREE = 0,    /* reset, waiting for a new thread */
    SS_NODE_CLAIMED = 1, /* taken by pthread_create, not yet attached to its thread */
    SS_NODE_LIVE = 2,    /* its thread runs */
    SS_NODE_ENDED = 3    /* its thread ended (its TSD destructor ran) */
};
/* What becomes of an ended node that no flush has written yet (threads.c). */
enum ss_node_fate { SS_FATE_OPEN = 0, SS_FATE_OWN = 1, SS_FATE_FOLD = 2 };
#define SS_NODE_MAGIC 0x53534e44u /* in `magic`: zero in a child whose copy the kernel wiped */

#define SS_SCHED_RING 256u /* points; a power of two. At 100 looks a second, 2.5 s between flushes */

/* A thread's node is made of one part per module, each reset by its module for a new thread
 * (ss_<module>_thread_reset), all from one place: ss_thread_reset (threads.c). The parts the
 * hooks' fast paths touch (alloc, stacks, locks) come first, after the record. */

/* alloc.c: the allocation hooks' countdown, and cross-thread frees. */
struct ss_alloc_thread {
    uintptr_t free_fast_below; /* a free of ptr may take its fast part if ptr - 1 is below this */
    /* A malloc of fewer bytes is counted by its size alone (struct ss_alloc_small): ss_fast_bytes
     * in a thread's node, 0 in SS_NO_THREAD and with another allocator. */
    size_t small_below;
    /* The call count (rec.fn[f].calls) at which the thread's next call of each function is
     * timed: the count a hook increments anyway is its countdown, so a call adds one memory
     * increment less. All 0 in SS_NO_THREAD, whose every call goes to the slow part. Not for
     * free and mallocs below small_below, which count down their slots (struct ss_alloc_small). */
    uint64_t timed_at[SS_FN_COUNT];
    /* Each function's sampling period in configured periods, which is the weight of its timed
     * calls (ss_fn_weight, ss_fn_period): it lengthens SS_TIMING_LONGER_FACTOR-fold once the
     * thread has timed ss_config.timed_before_longer of its calls since it began or last began a
     * phase (timed_left counts them down; 0: it stays), so that a thread making millions of calls
     * stops paying for samples it no longer needs. Timed calls add their weight to timed_calls
     * and their ticks times it to timed_ticks, so the estimates are those of one period
     * (docs/FORMAT.md, "Sampled timing"). */
    uint32_t weight[SS_FN_COUNT];
    uint32_t timed_left[SS_FN_COUNT];
    /* Sampled frees whose arena has a known allocating thread, and of those, the ones whose arena
     * another thread allocates from. */
    uint64_t frees_checked, frees_cross;
    uintptr_t own_arena; /* the arena of its last sampled allocation (0: none yet) */
    uint32_t free_mark;  /* frees before this thread's last large-bin request (ss_free_position) */
};

/* alloc.c: mallocs below ss_fast_bytes, counted by their exact size in one instruction each, and
 * frees.
 * A size's slot counts down the calls to its next timed one (`left`, the low half: the fast part
 * decrements it and leaves for its slow part when it borrows, below 0) and holds the position of
 * that call among the size's calls (`next_at`, 0 before the first call), so the calls so far are
 * next_at - 1 - left: one word, which the flusher reads whole. A position about to pass 2^32 is
 * moved into `base` (under `seq`, odd while the two change). The calls, bytes and size buckets
 * of these mallocs and the calls of free are not in the record (its free calls hold only a
 * correction: frees of the bootstrap pool, not counted): whoever writes or folds a record adds
 * them (ss_alloc_small_into). */
#define SS_SMALL_SIZES 1000u
#define SS_FREE_SLOT SS_SMALL_SIZES /* free's calls are counted the same way, in the slot after them */
union ss_small_slot {
    uint64_t word;
    struct {
        uint32_t left, next_at; /* x86-64 is little-endian: `left` is the word's low half */
    } part;
};
struct ss_alloc_small {
    uint32_t seq;
    uint64_t used[(SS_SMALL_SIZES + 1 + 63) / 64]; /* slots that were set: the flusher reads only these */
    uint64_t base[SS_SMALL_SIZES + 1];
    union ss_small_slot slot[SS_SMALL_SIZES + 1];
};

/* stacks.c: when the next allocation stack is taken, and the lock stacks' rate limit. */
struct ss_stacks_thread {
    uint32_t countdown;         /* timed allocation calls until the next count-sampled stack */
    int64_t bytes_left;         /* requested bytes until the next byte-sampled stack */
    uint64_t sample_weight_q16; /* the weight of the current stack sample */
    uint64_t last_waiter;       /* ticks of the last lock stacks taken (rate limit) */
    uint64_t last_holder;
};

/* locks.c: the timed holds, and the thread's lock table. */
struct ss_locks_thread {
    uint32_t countdown; /* lock acquisitions until the next timed hold */
    uint32_t nheld;
    /* Per lock kind (indexed by enum ss_lock_kind), the lock whose slot the thread used last and
     * that slot: one compare with the lock's address finds it. */
    struct ss_last_lock {
        uintptr_t address;
        struct ss_lock_stats *slot;
    } last[SS_LOCK_KIND_SLOTS];
    struct ss_held held[SS_HELD_MAX];
    uint32_t holder_skip; /* releases with waiters to let pass before the next holder stack */
    /* The condition variable the thread last returned from waiting on, and the count of its mutex's
     * slot then: a wait on it that begins with the count unchanged follows a wake-up after which
     * the thread never released the mutex (it found no work: SS_NOTIFY_REWAIT). */
    uintptr_t last_cond;
    uint32_t last_cond_slot;
    uint64_t last_cond_acquisitions;
    /* A mutex wait the thread slept through and has not recorded yet (locks.c,
     * ss_mutex_contended): recorded after the mutex's release, so that the hold the wait ended in
     * is not made longer. pending_lock 0: none. */
    uintptr_t pending_lock;
    uint32_t pending_slot, pending_owner;
    uint64_t pending_ticks, pending_end;
    /* A condition wait that returned and has not been recorded yet (locks.c, ss_cond_wait_done):
     * its re-acquisition counted, its wait pushed and the rewait marks set after the mutex's
     * release, or before anything that must come after it (another wait's record, the next
     * condition wait, the thread's end). Work there would lengthen the hold the wait returned
     * into, and make the other threads find the mutex taken more often (docs/PERFORMANCE.md,
     * "Faithfulness"). pending_cond 0: none. */
    uintptr_t pending_cond;
    uintptr_t pending_cond_mutex;
    uint64_t pending_cond_waker; /* the waker slot's stamp read at the return (0: unknown) */
    uint64_t pending_cond_start, pending_cond_end;
    uint32_t pending_cond_flags; /* SS_COND_WOKEN, SS_COND_REWAIT */
    /* Each slot's lock and kind as one word (ss_lock_key; 0: free), read by this thread only: a
     * lookup probes these, a cache line for eight slots, instead of the slots themselves, a line
     * each (node's start-up: 800,000 read locks among 261 locks, each lookup past the first
     * probe a few cache misses, 3% of its CPU time). */
    uint64_t keys[SS_LOCK_SLOTS];
    struct ss_lock_stats table[SS_LOCK_SLOTS + 1]; /* cleared slot by slot, only where used */
};

/* phases.c: the open phases, mapped on first use. */
struct ss_phases_thread {
    struct ss_phase_open *open;
    uint32_t count;
};

/* The run of parallel regions the thread started last (omp.c): a region within
 * SS_OMP_RUN_GAP_US of the last extends it; a gap or the thread's end pushes it on the wait ring
 * (SS_WAIT_REGION), so the timeline gets a band per run rather than per region. The same for
 * the TBB algorithms the thread ran (itt.c: __itt_task_begin/end). */
struct ss_omp_run {
    uint64_t body; /* the body of its longest region; TBB: its caller's stack (itt.c) */
    /* In ticks (one clock read per region, not a clock_gettime too): made ns by the flush, as
     * every wait on the ring is (waitfor.c). */
    uint64_t start_ticks, end_ticks, longest_ticks;
    uint64_t team_ticks, body_ticks;
    uint32_t count;
    uint8_t kind; /* SS_LOCK_OMP_REGION, or SS_LOCK_ITT_SYNC for TBB's algorithms */
};

/* omp.c */
struct ss_omp_thread {
    struct ss_omp_run run;
    uint64_t region_seq; /* tags the members' slots of the thread's regions (omp.c) */
    uint32_t countdown;  /* short regions until the next timed one */
    uint32_t last_team;  /* the team of the last timed region */
    /* In a GOMP_critical_* hook's call of the runtime: libomp answers it with its own __kmpc_*
     * critical calls, which are that one acquisition or release, not another (omp.c). */
    uint32_t in_gomp_call;
};

/* itt.c */
struct ss_itt_thread {
    /* The object an ITT collector was told this thread is about to take (__itt_sync_prepare),
     * and when; 0: none. */
    uintptr_t object;
    uint64_t start;
    struct ss_omp_run tbb_run;
    uint64_t task_start_ticks; /* the outermost TBB algorithm the thread is in */
    uint32_t task_stack, task_depth;
    uint8_t tbb_worker; /* named "TBB Worker Thread" through ITT: its tasks are not the caller's */
};

/* sampler.c: thread-state samples. CPU samples pushed by the thread's own signal handler, wall
 * samples by the flusher; each ring has one producer and is drained by the flush. The rings live
 * in the node's own mapping, after the structure (ss_node_rings). */
#define SS_PROC_FILES 4 /* enum ss_proc_file (sampler.c) */
struct ss_sampler_thread {
    struct ss_sample *cpu_ring, *wall_ring;
    uint32_t cpu_head, cpu_tail, wall_head, wall_tail;
    int timer, has_timer;
    uint64_t last_cpu_ns;      /* the thread's CPU time at its last CPU sample */
    uint64_t last_wall_ns;     /* when the flusher last looked at it */
    uint64_t last_wall_cpu_ns; /* and the thread's CPU time then */
    struct ss_sample last_wall; /* its last wall sample (mono_ns 0: none) */
    /* The last wall samples of the thread asleep inside a wait its hooks record (a lock, a
     * condition, a futex through syscall(), ...) and outside one: a look that finds it running
     * after many short waits splits the time between them by the recorded waits' time. */
    struct ss_sample last_recorded, last_other;
    uint64_t look_ticks;     /* when the flusher last looked (ticks; read by the thread's waits) */
    uint64_t ended_seen;     /* waits.ended_ticks at that look */
    uint8_t last_wall_recorded; /* last_wall was taken inside a recorded wait */
    uint8_t looks_deferred;     /* looks left out in a row: it ran throughout (sampler.c) */
    /* The last stacks the flusher read of the thread asleep and found it still asleep after: by
     * system call, pc and stack pointer, for the looks that catch it waking. */
    struct ss_still_stack {
        uint64_t pc, sp;
        uint32_t stack;
        uint16_t syscall;
    } still[4];
    uint32_t still_next;
    uint32_t cpu_head_seen; /* the flusher's last look at cpu_head */
    /* The thread's /proc files (enum ss_proc_file, sampler.c), kept open in the flusher's own
     * descriptor table: each valid only for the flusher of generation `proc_gen` and thread
     * `proc_tid` (never reset by the thread: only the flusher may close them). */
    int proc_fd[SS_PROC_FILES];
    uint32_t proc_tid[SS_PROC_FILES], proc_gen[SS_PROC_FILES];
    uint32_t sig_blocked;   /* the thread blocks the sampling signal: the flusher samples its CPU clock */
    /* The kernel's figures for the thread: points pushed by the flusher at each look, drained by
     * the flush (one producer, one consumer), and the cumulative figures of the last point pushed
     * (a point holds the difference). */
    struct ss_sched_point sched_ring[SS_SCHED_RING];
    uint32_t sched_head, sched_tail;
    struct ss_sched_totals {
        uint64_t exec_ns, run_delay_ns, minflt, majflt, stime_ticks, switches;
    } sched_last;
};

/* waitfor.c: the thread's blocking waits, pushed by the thread itself on the slow paths and
 * drained by the flush, in the node's mapping after the sample rings. */
struct ss_waits_thread {
    struct ss_wait *ring;
    uint32_t head, tail;
    uint64_t dropped;  /* since the last WAITS record (written by the thread, read by the flush) */
    uint64_t reported; /* what the flush has already reported of it */
    /* For the wall sampler (sampler.c), written by the thread around each wait it records, read
     * by the flusher: when the wait it is in began (ticks; 0: in none), and the time its ended
     * waits lasted since the flusher's look before each one ended (ticks, cumulative). */
    uint64_t blocked_since;
    uint64_t ended_ticks;
    uint64_t last_end; /* when the last one ended (ticks) */
};

/* The node itself (threads.c): its place on the list, its record and its identity. */
struct ss_thread {
    struct ss_thread *next; /* the global list; pushed once, never removed */
    uint32_t state;         /* enum ss_node_state */
    uint32_t magic;         /* SS_NODE_MAGIC once initialised in this address space */
    uint32_t listed;        /* on the list already (a reused node) */
    uint32_t fate;          /* enum ss_node_fate, decided by the flusher once the thread ended */
    uint32_t in_batch;      /* the flush being assembled writes it */
    uint32_t gone;          /* the flush being assembled found its thread gone from the kernel */
    struct ss_thread_record rec;
    uint64_t rng; /* the random intervals of timed calls and holds (ss_next_interval_of) */
    struct ss_alloc_thread alloc;
    struct ss_stacks_thread stacks;
    struct ss_locks_thread locks;
    void *(*start_fn)(void *);
    void *start_arg;
    uint64_t cpu_base_ns; /* CPU time before the record began (the main thread's start-up) */
    uint64_t written_signature; /* what the last flush wrote, to skip unchanged ended threads */
    int written; /* its serial is in the file (a record or samples): it is written on its own */
    uintptr_t pthread_id;    /* pthread_self() of the thread: a join names the thread it waits for */
    /* Its name as Python's threading module gives it (python.c, the flusher's), py_name_len
     * bytes; 0: none read. */
    char py_name[SS_PY_THREAD_NAME_MAX];
    uint32_t py_name_len;
    /* The recording window it was attached in (attach.c): a node of an earlier window is
     * dropped by its thread at its next slow part (ss_known), and never written again. */
    uint32_t window;
    /* Made by the flusher when a window opened, for a thread that existed then (attach.c): its
     * CPU timer runs from the start; the thread adopts the node at its first hooked call. */
    uint32_t covered;
    /* Its thread let go of it (ss_drop_stale): nothing of that thread writes it again, so a
     * node of a closed window can be reused (threads.c, ss_threads_reclaim). */
    uint32_t released;
    struct ss_thread *retired_next; /* the flusher's list of nodes of closed windows */
    struct ss_phases_thread phases;
    struct ss_omp_thread omp;
    struct ss_itt_thread itt;
    struct ss_sampler_thread sampler;
    struct ss_waits_thread waits;
    struct ss_alloc_small small; /* last: 16 KB, of which the fast part touches the sizes in use */
};

/* Every part of a node brought to a new thread's start (lifecycle.c), and each module's part.
 * A node whose magic is not SS_NODE_MAGIC is all zeros (a new mapping, or wiped in a fork
 * child): what is zero already need not be cleared. */
void ss_thread_reset(struct ss_thread *t);
void ss_threads_thread_reset(struct ss_thread *t);
void ss_alloc_thread_reset(struct ss_thread *t);
/* A phase begins on thread t: its allocator calls are sampled at the configured period again. */
void ss_alloc_phase_begin(struct ss_thread *t);
/* Adds a thread's mallocs counted by size and its frees (struct ss_alloc_small) to its stats
 * (SS_FN_COUNT of them) and, unless NULL, its size buckets: of a running thread too (the
 * flusher), as the thread counted them. */
void ss_alloc_small_into(const struct ss_thread *t, struct ss_fn_stats *fn, uint64_t *size_hist);
void ss_stacks_thread_reset(struct ss_thread *t);
void ss_locks_thread_reset(struct ss_thread *t);
void ss_phases_thread_reset(struct ss_thread *t);
void ss_omp_thread_reset(struct ss_thread *t);
void ss_itt_thread_reset(struct ss_thread *t);
void ss_sampler_thread_reset(struct ss_thread *t);
void ss_waitfor_thread_reset(struct ss_thread *t);

#define SS_CPU_RING 4096u /* samples; a power of two. At 1 kHz, four seconds between flushes */
#define SS_WALL_RING 512u
#define SS_WAIT_RING 2048u /* blocking waits between two flushes; a power of two */
#define SS_WAIT_RING_EARLY (SS_WAIT_RING / 2) /* waits in a ring that ask for an early flush (writer.c) */

/* Real functions, resolved with dlsym(RTLD_NEXT). */
struct ss_real {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);

    int (*mutex_lock)(pthread_mutex_t *);
    int (*mutex_trylock)(pthread_mutex_t *);
    int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*mutex_unlock)(pthread_mutex_t *);
    int (*rwlock_rdlock)(pthread_rwlock_t *);
    int (*rwlock_tryrdlock)(pthread_rwlock_t *);
    int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_wrlock)(pthread_rwlock_t *);
    int (*rwlock_trywrlock)(pthread_rwlock_t *);
    int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *);
    int (*rwlock_unlock)(pthread_rwlock_t *);
    int (*spin_lock)(pthread_spinlock_t *);
    int (*spin_trylock)(pthread_spinlock_t *);
    int (*spin_unlock)(pthread_spinlock_t *);
    int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);

    int (*sigaction)(int, const struct sigaction *, struct sigaction *);
    __sighandler_t (*signal)(int, __sighandler_t);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    void (*exit)(int) __attribute__((noreturn));
    void (*underscore_exit)(int) __attribute__((noreturn));
    void (*underscore_Exit)(int) __attribute__((noreturn));
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*fexecve)(int, char *const[], char *const[]);
    int (*execveat)(int, const char *, char *const[], char *const[], int);
    int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                       char *const[], char *const[]);
    int (*setuid)(uid_t);
    int (*setgid)(gid_t);
    int (*seteuid)(uid_t);
    int (*setegid)(gid_t);
    int (*setreuid)(uid_t, uid_t);
    int (*setregid)(gid_t, gid_t);
    int (*setresuid)(uid_t, uid_t, uid_t);
    int (*setresgid)(gid_t, gid_t, gid_t);
    int (*setgroups)(size_t, const gid_t *);
    int (*initgroups)(const char *, gid_t);
    int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);
    int (*dlclose)(void *);
    int (*prctl)(int, unsigned long, unsigned long, unsigned long, unsigned long);
    int (*libc_start_main)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),
                           void (*)(void), void *);
};

struct ss_config {
    int dormant;       /* loaded but not recording (e.g. a child with --no-children) */
    int paused;        /* run --paused: loaded with recording off until `stallscope attach` (attach.c) */
    int continuous;    /* run --push: the windows follow one another; the hooks stay in place between them */
    uint32_t timing;   /* enum ss_timing */
    uint32_t period;   /* mean sampling period for timed calls */
    uint32_t timed_before_longer; /* a function's timed calls before its period lengthens (0: never; struct ss_alloc_thread) */
    uint32_t lock_period; /* the same for lock holds: `period` (files without SS_PROCESS_LOCK_PERIOD) */
    uint32_t flush_ms; /* period of the background flush */
    char dir[512];     /* where profiles go (absolute) */
    char output[1024]; /* explicit path for the launched process, if any */
    char index[1024];  /* the supervisor's index of written profiles, if any */
    uint32_t snapshot_ms;  /* period of heap snapshots taken by the flusher (0: none) */
    int snapshot_signal;   /* SIGUSR2 takes a heap snapshot */
    uint64_t stack_bytes;  /* mean bytes between byte-sampled allocation stacks (0: off) */
    uint32_t stack_period; /* one allocation call in N has its stack taken (0: off) */
    uint32_t cpu_hz;       /* thread-state CPU samples per second of thread CPU time (0: off) */
    uint32_t wall_hz;      /* wall samples per second of threads not running (0: off) */
    /* Not options: the lock hooks take glibc's own uncontended steps on rwlock reads and on normal
     * mutexes (lock_steps.h), after a check at start (and unless the option LOCK_STEPS is 0). Here
     * because this is read-only after start. */
    int rwlock_steps;
    int mutex_steps;
};

/* The run options (ss_options.def, read in base.c): a text option's value (NULL: unset), a
 * number's (its default when unset or not a number, brought within its bounds), a flag's. */
enum ss_option {
#define SS_OPTION(id, env, kind, def, lo, hi, doc) SS_OPT_##id,
#include "ss_options.def"
#undef SS_OPTION
    SS_OPT_COUNT
};
const char *ss_option_text(enum ss_option id);
/* The run's settings, out of the program's environment and back in at exec (environ.c). */
void ss_take_settings(void);
void ss_strip_settings_again(void);
const char *ss_setting(const char *name); /* an option of the table (ss_options.def): its value, or NULL */
extern pid_t ss_parent_pid;               /* the parent at fork or exec, before any re-parenting */
extern int ss_settings_lost;              /* preloaded without settings, none found: record nothing */
/* 0: envp goes to exec as it is. `target`: the program (searched along PATH when `search`), or
 * the descriptor `fd` when NULL; *drop: its loader is not glibc's, our preload comes out. */
size_t ss_env_room(char *const envp[], const char *target, int fd, int search, int *drop);
char *const *ss_env_for_exec(char *const envp[], size_t room, char **on_stack, char *parent_entry, int drop);
#define SS_ENV_STACK_MAX 1024 /* longer environments are rebuilt in a mapping */
#define SS_PARENT_ENTRY_SIZE 64
/* `name`: envp with the settings put back (or, for a program whose loader is not glibc's, our
 * preload taken out), built in the caller's frame (exec may be called in a vfork child, where
 * nothing may be allocated); with_parent: add STALLSCOPE_PARENT (exec of this process, whose pid
 * the new image keeps). name##_profiled: the new image records (it gets our preload and the
 * settings). */
#define SS_ENV_FOR_EXEC(envp, name, with_parent, target, fd, search)                                      \
    int name##_drop = 0;                                                                                  \
    size_t name##_room = ss_env_room(envp, target, fd, search, &name##_drop);                             \
    char *name##_stack[name##_room && name##_room <= SS_ENV_STACK_MAX ? name##_room : 1];                 \
    char name##_parent[SS_PARENT_ENTRY_SIZE];                                                             \
    int name##_profiled = name##_room && !name##_drop;                                                    \
    char *const *name =                                                                                   \
        ss_env_for_exec(envp, name##_room, name##_stack, (with_parent) ? name##_parent : NULL, name##_drop)
/* After a call that returns (posix_spawn, a failed exec): a long environment was mapped. */
#define SS_ENV_RELEASE(envp, name) ss_env_release(envp, name, name##_stack, name##_room)
void ss_env_release(char *const envp[], char *const *env, char **on_stack, size_t room);
void ss_note_unprofiled(const char *text); /* a line for `stallscope run` to show (environ.c) */
extern int ss_stacks_no_unwinder;              /* stacks asked for, no unwinder loaded (stacks.c) */
size_t ss_main_program(char *out, size_t cap); /* the program's file, not its loader's (stacks.c) */
uint64_t ss_option_num(enum ss_option id);
int ss_option_flag(enum ss_option id);

/* The base (base.c): set up by lifecycle.c's initialisation. */
void ss_resolve(void);
/* The definition a hook forwards to (NULL version: the default one). */
void *ss_real_sym(const char *name, const char *version);
void ss_read_config(void);
void ss_calibrate(void);

/* Global state (base.c). */
extern struct ss_real ss_real;
extern struct ss_config ss_config;

/* A function's weight and mean sampling period in a thread (struct ss_alloc_thread). A node the
 * kernel zeroed (MADV_WIPEONFORK), which a child made by a raw clone uses until it is adopted, has
 * no weight set: weight 1, the configured period. */
static inline uint32_t ss_fn_weight(const struct ss_thread *t, enum ss_fn fn) {
    uint32_t w = t->alloc.weight[fn];
    return SS_LIKELY(w) ? w : 1;
}
static inline uint32_t ss_fn_period(const struct ss_thread *t, enum ss_fn fn) {
    return ss_config.period * ss_fn_weight(t, fn);
}
extern int ss_active;         /* recording: hooks take the fast path */
/* The process installed a seccomp filter (or tried to): recording ended for good, and the
 * interposer makes no system call of its own from then on (sandbox.c, lifecycle.c). */
extern int ss_sandboxed;
void ss_before_sandbox(void); /* lifecycle.c; the layers below it call ss_lifecycle()->before_sandbox */
/* Whether a seccomp(2) call with these arguments would install a filter or strict mode (not a
 * probe of the kernel's support, which fails by design, nor a query) (futex.c). */
int ss_seccomp_installs(long op, long flags, const void *args);
extern int ss_use_tsc;        /* ticks come from rdtsc rather than clock_gettime */
extern uint64_t ss_ns_per_tick_q32; /* ns = ticks * this >> 32 */
extern uint64_t ss_ticks_per_sec;
extern uint64_t ss_sample_cap_ticks; /* longest duration counted for a sampled call (50 us) */
extern struct ss_thread *ss_threads; /* list head, pushed with CAS (base.c; threads.c pushes) */
extern pid_t ss_pid;
extern SS_TLS struct ss_thread *ss_self;
/* What ss_self is when the calls of the thread are not recorded into a record of its own (see
 * ss_enter below). */
extern struct ss_thread ss_no_thread;
#define SS_NO_THREAD (&ss_no_thread)
extern SS_TLS int ss_busy;
extern SS_TLS int ss_walking_heap; /* phases.c: glibc walks the heap for a snapshot */
/* A fork child that lives on starts its flusher when this is due (0: not pending) (base.c;
 * ss_child_flusher_check, writer.c, starts it). */
extern uint64_t ss_child_flusher_due;
#define SS_CHILD_FLUSHER_DELAY_NS 100000000ull
void ss_child_flusher_check(void);

/* Time. */
uint64_t ss_mono_ns(void);
uint64_t ss_realtime_ns(void);
static inline uint64_t ss_ticks(void) {
    if (SS_LIKELY(ss_use_tsc)) {
        uint32_t lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
    return ss_mono_ns();
}
static inline uint64_t ss_ticks_to_ns(uint64_t ticks) {
    return (uint64_t)(((unsigned __int128)ticks * ss_ns_per_tick_q32) >> 32);
}
/* Around the blocking call of a wait the hooks record (waitfor.c), for the wall sampler: the
 * thread is in a recorded wait, then the part of it since the sampler's last look is added to the
 * thread's recorded waiting. A store before, two loads and three stores after: no more. */
static inline void ss_wait_enter(struct ss_thread *t, uint64_t start_ticks) {
    SS_STORE(t->waits.blocked_since, start_ticks | 1); /* never 0 */
}
static inline void ss_wait_leave(struct ss_thread *t, uint64_t start_ticks, uint64_t end_ticks) {
    uint64_t look = SS_LOAD(t->sampler.look_ticks), from = start_ticks > look ? start_ticks : look;
    if (end_ticks > from) SS_ADD(t->waits.ended_ticks, end_ticks - from);
    SS_STORE(t->waits.last_end, end_ticks);
    SS_STORE(t->waits.blocked_since, 0);
}
/* Ticks as CLOCK_MONOTONIC nanoseconds, for the times a hook keeps in ticks (a clock_gettime is
 * two rdtsc's worth, and around a lock or condition wait every nanosecond shifts how the program's
 * threads meet: docs/PERFORMANCE.md, "Faithfulness"): a clock pair read once by the
 * flush (ss_tick_clock_now), then converted (ss_tick_clock_mono). */
struct ss_tick_clock {
    uint64_t ns, ticks, ns_per_tick_q32; /* ns_per_tick_q32 0: ticks are nanoseconds */
};
void ss_tick_clock_now(struct ss_tick_clock *c);
uint64_t ss_tick_clock_mono(const struct ss_tick_clock *c, uint64_t ticks);
/* Microseconds as ticks (to a microsecond's worth of ticks: bounds, not measurements). */
static inline uint64_t ss_us_to_ticks(uint64_t us) { return us * (ss_ticks_per_sec / 1000000u); }

/* The calls until the next timed one: a random interval with mean `period` (uniform on
 * [1, 2 * period - 1]), so that the timed calls are a 1-in-period sample, unbiased for totals. */
uint32_t ss_next_interval_of(struct ss_thread *t, uint32_t period);
/* The same for lock holds (on ss_config.lock_period). */
uint32_t ss_next_lock_interval(struct ss_thread *t);
static inline int ss_take_timed_hold(struct ss_thread *t) {
    if (SS_LIKELY(--t->locks.countdown != 0)) return 0;
    t->locks.countdown = ss_next_lock_interval(t);
    return 1;
}

/* Every hook starts with `ss_self`, which is never NULL: the thread's record, or SS_NO_THREAD
 * (a thread not known yet, the interposer's own code and guarded calls, which also set ss_busy to
 * 1, and a thread after the final flush). SS_NO_THREAD is a record whose fields send every fast
 * part to its slow part without a test of its own (no lock is in its table or last used, it has a
 * timed hold, its next timed allocator calls are at count 0, its byte countdown is far below 0, its
 * frees are never fast); the slow parts read it
 * as NULL (ss_known). So the fast part has no NULL test. It is shared by all threads and written
 * without care by fast parts that count before they decide (an allocation's counts and
 * countdowns): it is never read as counts. ss_enter_slow makes sure the interposer is initialised
 * and gives the thread a record (lifecycle.c, through ss_lifecycle()); it returns NULL when the
 * call must just be forwarded. */
struct ss_thread *ss_enter_slow(void);
#define SS_NO_THREAD_BYTES_LEFT (INT64_MIN / 2)
/* Recording windows (attach.c): in a process started with `run --paused`, recording is on only
 * while `stallscope attach` holds a window open. ss_window is the number stamped on the nodes
 * attached in the current window (0 in a process that records from its start); closing or
 * opening a window changes it, so a node of another window is stale: its thread drops it (its
 * ss_self and ss_me become empty) at its next slow part, and the call goes on as a thread's
 * that has no record (a new one while a window is open, none while closed). */
extern uint32_t ss_window;
extern int ss_paused;      /* the process was started paused: windows open and close */
extern int ss_window_open; /* a window is open (recording; ss_active) */
#define SS_WINDOW_NONE UINT32_MAX /* the stamp of a node attached while no window is open */
struct ss_thread *ss_drop_stale(void);
static inline int ss_stale(const struct ss_thread *t) {
    return SS_UNLIKELY(t->window != __atomic_load_n(&ss_window, __ATOMIC_RELAXED));
}
static inline struct ss_thread *ss_known(struct ss_thread *t) {
    if (SS_UNLIKELY(t == SS_NO_THREAD)) return NULL;
    return ss_stale(t) ? ss_drop_stale() : t;
}
/* The calling thread's record, or NULL (not recording into one). */
static inline struct ss_thread *ss_self_known(void) { return ss_known(ss_self); }
static inline struct ss_thread *ss_enter(void) {
    struct ss_thread *t = ss_self;
    return SS_LIKELY(t != SS_NO_THREAD) && !ss_stale(t) ? t : ss_enter_slow();
}
#define SS_GUARD_BEGIN(saved)                                                                                \
    struct ss_thread *saved = ss_self;                                                                      \
    ss_self = SS_NO_THREAD;                                                                                 \
    ss_busy = 1
#define SS_GUARD_END(saved)                                                                                  \
    ss_busy = 0;                                                                                            \
    ss_self = saved
/* Calls into an allocator other than glibc's are guarded: it may call hooked functions itself. */
extern int ss_guard_calls;
/* Requests below this many bytes may take an allocation hook's fast part: 0 until the interposer
 * knows the allocator is glibc's (alloc.c). */
extern size_t ss_fast_bytes;
void ss_alloc_init(void);
void ss_ensure_resolved(void);
/* Whether `fn` is the C library's own, not another library's that the program or an interposer
 * put before it (glibc before 2.34 kept the pthread functions in libpthread). */
int ss_in_libc(const void *fn);
const char *ss_object_path(const void *addr);
/* symbols.c: `name` as dlsym(RTLD_NEXT) finds it, without the loader's lock; then in the objects
 * named in `runtimes` (NULL-terminated, may be NULL) wherever they were loaded. */
void *ss_next_symbol(const char *name, const char *const *runtimes);
/* The same for the reference of the object at address `caller`, as the dynamic linker binds it
 * (the global scope, then the caller's own); the callers the answer holds for in [*lo, *hi). */
void *ss_runtime_symbol(const char *name, const char *const *runtimes, uintptr_t caller, uintptr_t *lo,
                        uintptr_t *hi);
void ss_symbols_init(void); /* at start: which objects the global scope holds, and this library's extent */
extern uintptr_t ss_library_lo, ss_library_span; /* this library's addresses: lo <= a < lo + span */
struct dl_phdr_info;
/* The addresses an object's loaded segments span: [*lo, *hi), empty (hi <= lo) when none. */
void ss_object_extent(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);
/* A dynamic entry's address: relocated in place by the loader for most objects, not all. */
uintptr_t ss_dyn_ptr(uintptr_t base, unsigned long value);
/* An object's DT_SONAME (NULL: none). */
const char *ss_soname_of(const struct dl_phdr_info *info);
/* glibc's chunk size word: the word before a block holds its chunk's size, with flags in the low
 * 3 bits (alloc.c reads it; glibc_check.c checks at start that it reads so). */
#define SS_CHUNK_FLAG_BITS 7u
#define SS_CHUNK_MMAPPED 2u
#define SS_CHUNK_NON_MAIN_ARENA 4u
static inline size_t ss_chunk_header(const void *ptr) { return ((const size_t *)ptr)[-1]; }

/* glibc_check.c: the allocator's internals checked at start. */
extern int ss_heap_unchecked;  /* size words not as expected: every allocator call guarded */
extern int ss_arena_reads_off; /* heaps of huge pages: no heap_info read (no cross-thread frees) */
int ss_glibc_heap_check(void);

/* Lock hooks (locks.c): what they need to know of glibc's locks, read at start-up. */
void ss_locks_init(void);

/* Allocation stacks (stacks.c). The byte countdown runs on allocation calls of ss_fast_bytes or
 * more (all of them with another allocator); the count-based sample is a subset of the timed
 * calls. */
extern int ss_stacks_on;
uint32_t ss_stack_sample(struct ss_thread *t, enum ss_fn fn, size_t bytes, int timed, int byte_fired);
void ss_stack_time(struct ss_thread *t, uint32_t site, uint64_t ticks);
void ss_stacks_init(void);
void ss_stacks_note_modules(void); /* around a dlclose (lifecycle.c) */
void ss_stacks_child_setup(void);
int ss_stacks_write(int with_samples, int final);
/* Lock stacks, rate-limited per thread: a waiter's before it blocks (returns a site, 0 if none),
 * and a holder's when it releases a lock that others wait for. */
uint32_t ss_lock_waiter_stack(struct ss_thread *t, const void *lock, uint32_t kind);
/* Whether a waiter's stack would be taken at `now` (the rate limit alone, without reading the clock). */
int ss_lock_waiter_stack_due(struct ss_thread *t, uint64_t now);
/* The same, past the rate limit when `first` (the thread's first wait on a futex word: every word
 * gets a stack that says what it is). */
uint32_t ss_lock_waiter_stack_of(struct ss_thread *t, const void *lock, uint32_t kind, int first);
void ss_lock_waiter_done(uint32_t lock_site, uint64_t wait_ticks);
void ss_lock_holder_stack(struct ss_thread *t, const void *lock, uint32_t kind);

/* The fast unwinder (unwind.c): the caller's return addresses, the interposer's frames left out
 * (ss_fast_backtrace), or the callers of an instruction a signal interrupted (_from); -1 when the
 * stack needs libgcc's unwinder. Set up only where it can work; `alone`: no unwinder behind it, a
 * stack it cannot finish is kept as far as it got. */
extern int ss_fast_unwind_on;
void ss_fast_unwind_init(uintptr_t own_lo, uintptr_t own_hi, int alone);
void ss_fast_unwind_forget(void);
int ss_fast_backtrace(uint64_t *pcs, uint32_t max);
int ss_fast_backtrace_from(uint64_t pc, uint64_t sp, uint64_t rbp, uint64_t *pcs, uint32_t max);

/* Stacks of thread-state samples: the callers of an instruction interrupted by a signal (called
 * from the handler), a list of pcs found otherwise, and whether an address is in loaded code. */
#define SS_STACK_KIND_CPU (SS_FN_COUNT + 3)
#define SS_STACK_KIND_SCAN (SS_FN_COUNT + 4)
uint32_t ss_stack_of_signal(uint64_t pc, uint64_t sp, uint64_t rbp);
uint32_t ss_stack_intern(const uint64_t *pcs, uint32_t n, uint32_t kind);
uint32_t ss_stack_here(void);
int ss_modules_contain(uint64_t address);

/* CPython's frames (python.c): a stack's Python frames as taken (the code object's address), the
 * calling thread's (async-signal-safe), and the flusher's records of them. */
struct ss_py_raw {
    uint64_t code;
    uint64_t fp; /* the code object's fingerprint (python.c), 0: unread */
    int32_t offset;
    uint32_t flags;
};
int ss_py_init(void);
uint32_t ss_py_capture(struct ss_py_raw *out, uint32_t max);
uint32_t ss_py_capture_of(uint64_t pthread_id, struct ss_py_raw *out, uint32_t max);
uint32_t ss_stack_intern_py(const uint64_t *pcs, uint32_t n, uint32_t kind, const struct ss_py_raw *py, uint32_t npy);
int ss_py_write_header(void);
int ss_py_write_stack(uint32_t id, const struct ss_py_raw *frames, uint32_t n);
void ss_py_file_reset(int child);
/* The flusher's tick: threads' names read from the threading module, now and then. */
void ss_py_names_tick(uint64_t now_ns);
/* The PY_THREAD record of a thread whose THREAD record was just written, if Python named it. */
int ss_py_write_thread(const struct ss_thread *t, uint32_t serial, uint32_t tid);

/* Thread-state sampling (sampler.c). */
extern SS_TLS struct ss_thread *ss_me;
void ss_sampler_init(void);
void ss_sampler_thread_start(struct ss_thread *t);
extern SS_TLS int ss_attach_untimed; /* the thread is attached for its process's final flush: no CPU timer */
void ss_sampler_thread_end(struct ss_thread *t);
void ss_sampler_after_fork_child(void);
int ss_sampler_drain(struct ss_thread *t, struct ss_buf *out, uint32_t serial);
struct ss_sample *ss_node_rings(struct ss_thread *t);
size_t ss_node_size(void);
void ss_sampler_tick(void);
/* The final flush: one more look at every live thread's kernel figures (schedstat's run-queue
 * delay of a wait that ended after the last look). */
void ss_sampler_last_looks(void);
int ss_sampler_write(void); /* returns the samples written, or -1 */
int ss_sampling_now(struct ss_sampling_record *r);

/* Wait-for edges (waitfor.c): called from the lock hooks' slow paths only. ss_wait_owner reads
 * the owner of a lock that looks taken (before the blocking call), ss_wait_lock records the wait
 * once the lock is acquired. */
uint32_t ss_wait_owner(const void *lock, uint32_t kind);
/* `woken_us`: how long before the wait's end the release that let it in woke it (ss_lock_woken_us;
 * 0: not known). */
void ss_wait_lock(struct ss_thread *t, const void *lock, uint32_t kind, uint32_t owner, uint64_t start_ticks,
                  uint64_t end_ticks, uint16_t woken_us);
/* A mutex wait from `start_ticks` to `end_ticks`: how long before that end the last release that
 * woke a waiter began its wake (noted by the unlock's slow part, ss_note_waker), in microseconds
 * (1 to SS_WOKEN_US_MAX); 0 when not known (no such release within the wait, the slot another
 * object's). Read before the thread's own release notes the slot. */
uint16_t ss_lock_woken_us(const void *lock, uint64_t start_ticks, uint64_t end_ticks);
/* A condition variable's wait: the waker slot's stamp before, and the wait recorded after (its
 * times in ticks). */
uint64_t ss_wait_cond_begin(const void *cond);
/* The waker slot's stamp of the notification that woke a wait on `object`, read as soon as it
 * returns (`stamp`: ss_wait_cond_begin's, read before it); 0 when not known. */
uint64_t ss_waker_of(const void *object, uint64_t stamp);
void ss_wait_cond_end(struct ss_thread *t, const void *cond, uint64_t waker, uint64_t start_ticks,
                      uint64_t end_ticks, int rewait);
/* Records the condition wait the thread has pending (locks.c), before a later wait is pushed. */
void ss_cond_wait_record(struct ss_thread *t);
/* What the thread left to record at a release that will not come (its end, exit, exec): its
 * pending waits, pushed while its ring is still written. */
void ss_locks_record_pending(struct ss_thread *t);
int ss_waits_write(struct ss_buf *out, uint32_t serial, struct ss_thread *t);
void ss_waitfor_init(void);
/* Futex waits through syscall() (futex.c): a wake that woke someone stamps the word's waker slot;
 * a wait is recorded with the waker that stamped it meanwhile (woken: the call returned 0). */
/* `wake_ticks`: when the wake began (before its call), for the waiter to know how long it took
 * to wake; 0 where the waiter's record has no room for it (condition variables, semaphores). A
 * mutex's release that woke a waiter notes it too (locks.c), for ss_lock_woken_us. */
void ss_note_waker(const void *object, uint32_t tid, int broadcast, uint64_t wake_ticks);
void ss_wait_futex_end(struct ss_thread *t, const void *word, uint64_t stamp, uint64_t start_ticks,
                       uint64_t end_ticks, int woken);
void ss_futex_init(void);
long ss_futex_own(uint32_t *word, int op, uint32_t val, const struct timespec *timeout); /* futex.c */
/* A futex call the interposer makes for the program (a lock step's wait or wake, lock_steps.h),
 * as glibc makes its own: a bare system call, not through the syscall() hook (futex.c), errno
 * unchanged; the kernel's result (a negative errno on failure). Inline, so that a thread asleep
 * in it is in the function that called it (a wait in ss_slow_pthread_mutex_lock shows as
 * pthread_mutex_lock, not as the interposer's own work). */
#if defined(__x86_64__)
static inline long ss_futex_quiet(int *word, int op, int val) {
    long rc;
    register void *timeout __asm__("r10") = NULL;
    __asm__ volatile("syscall"
                     : "=a"(rc)
                     : "0"((long)SYS_futex), "D"(word), "S"((long)op), "d"((long)val), "r"(timeout)
                     : "rcx", "r11", "memory");
    return rc;
}
#else
long ss_futex_quiet_call(int *word, int op, int val);
static inline long ss_futex_quiet(int *word, int op, int val) { return ss_futex_quiet_call(word, op, val); }
#endif
/* The slot of a lock in the thread's table (locks.c), found or claimed. */
uint32_t ss_lock_slot_for(struct ss_thread *t, const void *address, uint32_t kind);
/* OpenMP (omp.c, ompt.c): one run of a parallel region recorded in the master's lock table (kind
 * SS_LOCK_OMP_REGION: by its body; SS_LOCK_OMP_REGION_SITE: by its call site), ended at `end`
 * (ticks). */
void ss_omp_region_record(struct ss_thread *t, const void *region, uint32_t kind, uint32_t members, uint64_t wall,
                          uint64_t barrier, uint64_t fork_join, uint64_t end, uint32_t weight);
#define SS_STACK_KIND_INIT (SS_FN_COUNT + 5)
void ss_lock_init_stack(struct ss_thread *t, const void *lock, uint32_t kind);
/* Locks a runtime reports (locks.c): an acquisition timed by the caller (over a microsecond, or
 * `found_held`: a wait), and its release. */
void ss_runtime_acquired(struct ss_thread *t, const void *object, uint32_t kind, uint64_t wait, uint64_t now,
                         int found_held);
/* The same in parts, for the hooks that take an acquisition's first step themselves (omp.c): the
 * object's slot found before, then one that waited, or one the step took (an increment and the
 * countdown of timed holds: all that its hold pays). */
struct ss_lock_stats *ss_runtime_slot(struct ss_thread *t, const void *object, uint32_t kind);
void ss_runtime_waited(struct ss_thread *t, const void *object, uint32_t kind, struct ss_lock_stats *l, uint64_t wait,
                       uint64_t now, int found_held);
void ss_runtime_hold(struct ss_thread *t, const void *object, struct ss_lock_stats *l, uint64_t now);
void ss_runtime_releasing(struct ss_thread *t, const void *object);
/* ITT (itt.c): stallscope as the collector runtimes load through INTEL_LIBITTNOTIFY64. */
void ss_itt_init(int serve);
const char *ss_library_path(void);

/* Threads (threads.c): nodes, their reuse, and the groups ended threads are folded into. */
struct ss_thread *ss_thread_alloc(void);
void ss_thread_free(struct ss_thread *t);
void ss_thread_attach(struct ss_thread *t, int is_main);
void ss_thread_end(struct ss_thread *t);
void ss_omp_run_close(struct ss_thread *t); /* pushes the thread's open runs of regions (omp.c) */
void ss_omp_after_unload(void); /* a dlclose returned: forgets an unloaded runtime's functions (omp.c) */
void ss_run_add(struct ss_thread *t, struct ss_omp_run *run, uint8_t kind, uint64_t body, uint64_t start_ticks,
                uint64_t end_ticks, uint64_t team_ticks, uint64_t body_ticks); /* omp.c */
void ss_wait_region(struct ss_thread *t, const struct ss_omp_run *run); /* waitfor.c */
void ss_alloc_thread_end(struct ss_thread *t); /* alloc.c: gives up its arena */
void ss_thread_child_node(struct ss_thread *t);
void ss_thread_bare_record(struct ss_thread_record *rec, uint64_t forked, uint64_t now);
void ss_thread_began_at_fork(struct ss_thread *t, uint64_t forked);
uint64_t ss_writer_child_start_mono(void);
/* The kernel's CPU clock id of thread `tid` (as clock_getcpuclockid would give for a thread of
 * ours): any thread may read it or arm a timer on it, and it is invalid once `tid` is reaped. */
static inline clockid_t ss_thread_clock(pid_t tid) { return (clockid_t)((~(unsigned)tid << 3) | 6); }
uint64_t ss_thread_cpu_ns(pid_t tid);
void ss_threads_init(void);
void ss_threads_after_fork_child(void);
void ss_threads_fold_ended(void);
void ss_threads_prepare_batch(int final);
int ss_threads_write(int final);
void ss_threads_after_batch(int recycle);
uint32_t ss_threads_cross_frees(struct ss_cross_frees_entry *buf, uint32_t cap);
extern uint32_t ss_ended_pending; /* ended nodes the flusher has not looked at since */
/* A thread's wait ring is half full: the flusher flushes at its next tick rather than at the
 * next period (writer.c), no sooner than SS_EARLY_FLUSH_MS after the last flush. */
extern uint32_t ss_flush_requested;
#define SS_EARLY_FLUSH_MS 100u

size_t ss_read_file(const char *path, char *buf, size_t cap);

/* Bootstrap pool used while dlsym runs (alloc.c), and the cross-thread frees record. */
int ss_alloc_write(void);
void *ss_bootstrap_alloc(size_t size);
int ss_is_bootstrap(const void *p);

/* A growable output buffer of records, in memory the kernel wipes in a fork child. */
struct ss_buf {
    unsigned char *p;
    size_t len, cap;
};
int ss_buf_record3(struct ss_buf *b, uint32_t type, const void *a, size_t alen, const void *x, size_t xlen,
                   const void *c, size_t clen);
extern struct ss_buf ss_fold_out; /* records of folded threads, added to the next flush */
struct ss_buf *ss_out_buf(void);   /* the batch being assembled */
#define SS_FOLD_OUT_MAX (16u << 20)

/* Writing (writer.c). */
void ss_writer_init(void);
void ss_final_flush(uint32_t how, int32_t status);
void ss_writer_after_fork_child(void);
const char *ss_writer_original_argv(size_t *len);
/* title.c: the title a process gives itself (SS_REC_TITLE). */
int ss_title_write(void);
int ss_title_unchanged(void);
void ss_title_after_fork_child(void);
void ss_writer_child_setup(void);
void ss_writer_before_exec(void);
void ss_writer_exec_failed(void);
void ss_out_append(uint32_t type, const void *payload, size_t size);
int ss_flusher_running(void);
void ss_wake_flusher(void);
int ss_flush_try_lock(void);
void ss_flush_unlock(void);

/* Windows (attach.c): the flusher of a paused process listens for `stallscope attach` and opens
 * and closes windows; each module clears what a window left (the flusher, holding the flush
 * lock, with recording off). */
int ss_got_init(void);
/* got.c: the PLT slots of the hot calls at the C library (SS_GOT_LIBC), of every hook at the
 * hooks (SS_GOT_HOOKS: a window), or of the hooks that must stay (SS_GOT_KEEP: an injected
 * process, before its first window). */
enum { SS_GOT_LIBC = 0, SS_GOT_HOOKS = 1, SS_GOT_KEEP = 2 };
void ss_got_point(int mode);
int ss_writer_window_begin(int fd, const char *path, uint64_t process_start_mono_ns, uint32_t window);
void ss_writer_window_end(void);
void ss_threads_window_reset(void);
void ss_threads_cover_existing(void);
struct ss_thread *ss_thread_adopt_covered(void);
void ss_threads_covered_tick(void);
void ss_sampler_cover(struct ss_thread *t);
void ss_stacks_window_reset(void);
void ss_sampler_window_reset(void);
void ss_sampler_stop_timers(void);
void ss_alloc_window_reset(void);
extern uint64_t ss_process_start_mono_ns;
/* Loaded into a running process by `stallscope attach` (not preloaded): the hooks are reached
 * only through the PLT slots got.c points at them. */
extern int ss_injected;
int ss_loaded_by_attach(void);  /* base.c */
uint64_t ss_process_began_ns(void); /* when the process began, on the monotonic clock (base.c) */
#define SS_INJECT_NAME "libstallscope-attach" /* the name attach has the process dlopen */

/* Phases and heap snapshots (phases.c). */
void ss_phases_start(void);
void ss_phases_at_exit(void);
void ss_phases_tick(uint32_t elapsed_ms);
void ss_phases_append_pending(void);
int ss_phases_pending(void); /* records waiting for the next flush */
void ss_phases_after_fork_child(void);
void ss_start_flusher(void);
/* glibc's single-threaded flag across the flusher's creation (single.c). */
void ss_single_init(void);
int ss_single_before_create(void);
void ss_single_after_create(int keep);
int ss_single_kept(void);
int ss_on_flusher(void); /* the calling thread is the flusher (writer.c) */
void ss_sampler_flusher_start(int own_table); /* a new flusher thread (sampler.c) */
int ss_flusher_pause(void);  /* before a credential change (creds.c): 1 if the flusher left */
int ss_flusher_end(void);    /* before a seccomp filter (lifecycle.c): 1 if the flusher is gone */
void ss_flusher_resume(void); /* after it: a new flusher with the caller's credentials */
uint32_t ss_crc32(uint32_t crc, const void *data, size_t len);
int ss_out_record(uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
int ss_out_record3(uint32_t type, const void *a, size_t alen, const void *b, size_t blen, const void *c,
                   size_t clen);

/* Helpers that never allocate (base.c): a small formatter, mappings, /proc reads. */
struct ss_str {
    char *p;
    size_t len, cap;
};
void ss_str_cat(struct ss_str *s, const char *text);
void ss_str_u64(struct ss_str *s, uint64_t v);
uint64_t ss_parse_u64(const char *text, uint64_t fallback);
void ss_each_dir_number(int dir, int (*fn)(uint64_t n, void *ctx), void *ctx);

void *ss_map(size_t size);
void ss_unmap(void *p, size_t size);
/* Memory a fork child gets zeroed (MADV_WIPEONFORK): never copied page by page at fork. */
void *ss_map_wiped(size_t size);
extern int ss_wipe_works; /* the kernel wipes such memory in a child (else children reset it) */

#pragma GCC visibility pop


/* ---- the layers, and how a lower one reaches a higher one ----
 *
 * ground (base.c, settings.c: the real functions, options, clocks, global state) < services
 * (writer, stacks, unwinding, symbols, ...) < hooks (allocator, locks, futex, OpenMP, ITT, OMPT,
 * wait-for, phases, sampling, threads, credentials, exec environments) < lifecycle (lifecycle.c) <
 * attach and sandbox (docs/ARCHITECTURE.md, "The interposer's layers"; tests/preload_layers.rs
 * keeps them). A file names only its own layer and those below. What a lower layer must have a
 * higher one do, it asks through a registration placed in a section of its own, so that nothing
 * below names what is above:
 *
 * - struct ss_lifecycle: the lifecycle's entries, one instance (lifecycle.c, section
 *   ss_lifecycle): its start at the first call, a thread's node at its first hooked call, the end
 *   of recording before a sandbox, and what the flusher (writer.c) does at each step and puts in a
 *   batch. A function pointer call each, on slow paths only: never on a hook's fast part.
 * - struct ss_steps: the steps of each module above the lifecycle (attach.c, sandbox.c), in the
 *   section ss_steps, walked by lifecycle.c (SS_EACH_STEP) at start, in a fork child and on the
 *   flusher's behalf. */
struct ss_sampling_record;
struct ss_thread_record;
struct ss_lifecycle {
    void (*start)(void);                 /* the interposer's start (ss_ensure_resolved) */
    struct ss_thread *(*enter)(void);    /* a thread's node at its first call (ss_enter_slow) */
    void (*before_sandbox)(void);        /* a seccomp filter is about to be installed */
    /* The flusher thread (writer.c runs it): */
    void (*flusher_started)(int own_table); /* in the new thread, before anything else */
    void (*flusher_listen)(void);        /* a paused process's flusher, in its own table */
    void (*flusher_poll)(void);          /* a paused process's, at each turn: windows open, close */
    void (*flusher_paused_tick)(uint32_t idle_ticks);
    void (*flusher_tick)(uint64_t now, uint32_t elapsed_ms);
    void (*flusher_woken)(void);         /* woken early: many threads ended */
    void (*flusher_leaving)(void);       /* it leaves (a credential change, a sandbox, exit) */
    /* A batch (writer.c assembles and writes it): */
    int (*fork_child_untouched)(void);   /* a fork child that made no call we interpose */
    int (*bare_pending)(void);           /* records of a module waiting for the next flush */
    int (*bare_sampling)(struct ss_sampling_record *r);
    void (*bare_thread)(struct ss_thread_record *rec, uint64_t forked, uint64_t now);
    void (*batch_final_pending)(void);   /* the final batch: a fork child's pending thread first */
    void (*batch_begin)(int final);
    int (*batch_records)(int final, int had_fold_samples); /* -1: memory ran out */
    void (*batch_end)(int recycle);
};
extern const struct ss_lifecycle __start_ss_lifecycle[] __attribute__((visibility("hidden")));
static inline const struct ss_lifecycle *ss_lifecycle(void) { return __start_ss_lifecycle; }
#define SS_LIFECYCLE(name) const struct ss_lifecycle name __attribute__((used, section("ss_lifecycle")))
/* How far the start has come (base.c; lifecycle.c moves it on). */
enum ss_start_state { SS_UNINIT = 0, SS_RESOLVING = 1, SS_READY = 2 };
extern enum ss_start_state ss_start_state;
extern int ss_fork_child; /* this process is a fork child of the profiled one (lifecycle.c sets it) */

struct ss_steps {
    const char *name;
    void (*on_start)(void);         /* before the set-up's own calls */
    void (*on_fork_child)(void);    /* a paused process's fork child */
    void (*on_flusher_listen)(void);
    void (*on_flusher_poll)(void);
    void (*on_flusher_leave)(void);
};
#define SS_STEPS(name) static const struct ss_steps name __attribute__((used, aligned(8), section("ss_steps")))
extern const struct ss_steps __start_ss_steps[] __attribute__((visibility("hidden")));
extern const struct ss_steps __stop_ss_steps[] __attribute__((visibility("hidden")));
#define SS_EACH_STEP(s) for (const struct ss_steps *s = __start_ss_steps; s < __stop_ss_steps; s++)
/* The steps of modules below the lifecycle, which lifecycle.c lists in the order it needs them. */
extern const struct ss_steps ss_writer_steps, ss_sampler_steps, ss_threads_steps, ss_phases_steps;

#endif
