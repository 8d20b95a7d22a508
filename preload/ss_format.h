/* The stallscope profile file format, version 3: the one definition of its record ids,
 * enumerations, flags and layouts. The interposer writes it; the Rust reader's constants and
 * enumerations are generated from this header at build time (build.rs compiles and runs
 * build/format_consts.c, which walks the lists below), so adding an entry to a list, or a record
 * with its struct, is a change in this file only (plus the reader's parser of its fields).
 * docs/FORMAT.md describes the format in words.
 *
 * A file is a file header followed by records. All integers are little-endian (the only byte order
 * the interposer runs on); every record starts on an 8-byte boundary. Each record carries a CRC-32
 * (IEEE, as zlib) of its type, size and payload so that damage is detected rather than misread.
 *
 * Thread and lock records are cumulative: the writer rewrites a thread's record at each flush in
 * which it changed, and the reader keeps the last one per thread serial. A flush ends with an
 * SS_REC_FLUSH record; a clean exit writes SS_REC_END. A file that ends after FLUSH but without END
 * is a partial profile (the process was killed or crashed); a file cut anywhere else is read up to
 * its last whole flush. */
#ifndef STALLSCOPE_FORMAT_H
#define STALLSCOPE_FORMAT_H

#include <stdint.h>

#define SS_MAGIC "STALLSCP" /* 8 bytes, no terminator in the file */
#define SS_VERSION 5u /* 5: TITLE and PY_THREAD records; 4: PYTHON, PY_CODE and PY_STACK records; 3: struct ss_sample
                        * gained `object` (the reader also reads 4, 3, and 2: 32-byte samples without it) */
#define SS_BYTE_ORDER_MARK 0x01020304u

/* ---- Enumerations and flags: each is a list X(...) that C turns into an enum and build.rs into
 * Rust constants and enums. ---- */

/* Allocator functions, counted separately: X(id, name, the report's group it belongs to). */
#define SS_FUNCTIONS(X)                                                                                      \
    X(MALLOC, "malloc", MALLOC)                                                                              \
    X(CALLOC, "calloc", CALLOC)                                                                              \
    X(REALLOC, "realloc", REALLOC)                                                                           \
    X(REALLOCARRAY, "reallocarray", REALLOC)                                                                 \
    X(FREE, "free", FREE)                                                                                    \
    X(POSIX_MEMALIGN, "posix_memalign", ALIGNED)                                                             \
    X(ALIGNED_ALLOC, "aligned_alloc", ALIGNED)                                                               \
    X(MEMALIGN, "memalign", ALIGNED)                                                                         \
    X(VALLOC, "valloc", ALIGNED)                                                                             \
    X(PVALLOC, "pvalloc", ALIGNED)

enum ss_fn {
#define SS_X(id, name, group) SS_FN_##id,
    SS_FUNCTIONS(SS_X)
#undef SS_X
        SS_FN_COUNT
};

/* Latency histograms are kept per function group (the report's contract groups): X(id, name). */
#define SS_GROUPS(X) X(MALLOC, "malloc") X(CALLOC, "calloc") X(REALLOC, "realloc") X(FREE, "free") X(ALIGNED, "aligned")

enum ss_group {
#define SS_X(id, name) SS_GRP_##id,
    SS_GROUPS(SS_X)
#undef SS_X
        SS_GRP_COUNT
};

/* Lock kinds: X(id, value, name). */
#define SS_LOCK_KINDS(X)                                                                                     \
    X(MUTEX, 1, "mutex") X(RWLOCK_READ, 2, "rwlock-read") X(RWLOCK_WRITE, 3, "rwlock-write") X(SPIN, 4, "spinlock") \
    X(FUTEX, 5, "futex") /* a futex word waited on through the C library's syscall(): Rust's std, parking_lot, \
                            abseil, folly, oneTBB, libstdc++'s atomic waits. Only waits are seen: `acquisitions` \
                            and `contended` both count the wait calls, holds are not timed */       \
    X(OMP_CRITICAL, 6, "omp-critical") /* an OpenMP critical section (GOMP_critical_*, __kmpc_critical*): \
                            a named one by the address of the program's .gomp_critical_user_<name>, the \
                            unnamed one (libgomp's) at 1; a                                                \
                            wait is an acquisition that took over a microsecond; every hold is timed */     \
    X(OMP_LOCK, 7, "omp-lock") /* omp_set_lock / omp_set_nest_lock, as the critical sections */             \
    X(OMP_REGION, 8, "omp-region") /* not a lock: an OpenMP parallel region, by its outlined function's     \
                            address (libgomp: omp.c; it symbolizes to the pragma's line): acquisitions \
                            regions entered, \
                            contended the team members summed, wait_ticks the team's time at the region's \
                            closing barrier (libgomp: team x region wall - the members' body time;    \
                            OMPT: measured, each member from its arrival to the last one's), max_wait_ticks \
                            the fork-join cost summed over the runs (region wall - longest body),       \
                            timed_holds the                                                              \
                            regions again, hold_ticks the regions' wall time */                            \
    X(OMP_REGION_SITE, 9, "omp-region-site") /* an OpenMP parallel region as OMP_REGION, by its call site \
                            in the user's code: the return address of the call into the runtime less 1  \
                            (LLVM's libomp through OMPT: ompt.c), whose innermost frame is the pragma's  \
                            line (an inlined function's own, where the pragma is in one) */             \
    X(ITT_SYNC, 10, "itt-sync") /* an object a runtime reported to its ITT collector (oneTBB's mutexes built \
                            with TBB_USE_PROFILING_TOOLS, a program's own __itt_sync_* annotations), by  \
                            its address: a wait is a __itt_sync_prepare..acquired that took over a        \
                            microsecond; holds run from acquired to releasing, every one timed */

enum ss_lock_kind {
#define SS_X(id, value, name) SS_LOCK_##id = value,
    SS_LOCK_KINDS(SS_X)
#undef SS_X
};

/* How a process image ended (SS_REC_END): X(id, value, name). */
#define SS_END_HOWS(X)                                                                                       \
    X(EXIT, 1, "exit") X(UNDERSCORE_EXIT, 2, "_exit") X(EXEC, 3, "exec") X(DESTRUCTOR, 4, "destructor")     \
    X(DETACH, 5, "detach") /* `stallscope attach` ended its window: the process goes on unrecorded */   \
    X(SANDBOX, 6, "sandbox") /* it installed a seccomp filter: the process goes on unrecorded */

enum ss_end_how {
#define SS_X(id, value, name) SS_END_##id = value,
    SS_END_HOWS(SS_X)
#undef SS_X
};

/* Timing modes: every call timed, or a random 1-in-N sample (counts and bytes are always exact). */
#define SS_TIMINGS(X) X(SAMPLED, 0, "sampled") X(EXACT, 1, "exact")

enum ss_timing {
#define SS_X(id, value, name) SS_TIMING_##id = value,
    SS_TIMINGS(SS_X)
#undef SS_X
};

/* The roles of a lock site's stack (SS_REC_LOCK_SITES). */
#define SS_LOCK_ROLES(X)                                                                                     \
    X(WAITER, 1, "waiter") /* the stack of a thread that had to wait for the lock */                        \
    X(HOLDER, 2, "holder") /* the stack of a thread releasing the lock while others waited for it */        \
    X(INIT, 3, "init")     /* the stack of pthread_mutex_init/pthread_rwlock_init: names a heap lock */

enum ss_lock_role {
#define SS_X(id, value, name) SS_ROLE_##id = value,
    SS_LOCK_ROLES(SS_X)
#undef SS_X
};

/* Thread-state samples (SS_REC_SAMPLES). */
#define SS_SAMPLE_KINDS(X)                                                                                   \
    X(CPU, 1, "cpu")   /* the thread's CPU-time timer fired: it was running this instruction */             \
    X(WALL, 2, "wall") /* the sampler found the thread not running (read from /proc) */             \
    X(KERNEL, 3, "kernel") /* the thread ran, by its kernel CPU clock, but blocks the sampling signal:      \
                              weight only (pc, stack, state, syscall and arg are 0) */

enum ss_sample_kind {
#define SS_X(id, value, name) SS_SAMPLE_##id = value,
    SS_SAMPLE_KINDS(SS_X)
#undef SS_X
};

/* What a thread waited for (SS_REC_WAITS): X(id, value, name). */
#define SS_WAIT_KINDS(X)                                                                                     \
    X(LOCK, 1, "lock")           /* a pthread lock; the other thread is its owner when the wait began */   \
    X(CONDITION, 2, "condition") /* a condition variable; the other thread signalled or broadcast it */    \
    X(SEMAPHORE, 3, "semaphore") /* a semaphore; the other thread posted it */                              \
    X(JOIN, 4, "join")           /* pthread_join; the other thread is the one joined */                   \
    X(FUTEX, 5, "futex")         /* a futex wait through syscall(); the other thread is the one whose      \
                                    FUTEX_WAKE on the word woke it (0: a timeout, a changed value, unknown) */ \
    X(REGION, 6, "region")       /* not a wait: a run of parallel regions the thread started, each within   \
                                    1 ms of the last (preload/omp.c), for the timeline: object is the body  \
                                    of its longest region, other_tid the regions in the run, notification   \
                                    the team's share of its time in the run at the closing barriers,       \
                                    closing barriers in 1/10000, lock_kind SS_LOCK_OMP_REGION */

enum ss_wait_kind {
#define SS_X(id, value, name) SS_WAIT_##id = value,
    SS_WAIT_KINDS(SS_X)
#undef SS_X
};

/* Flags: X(id, bit value). */
/* FORKED: a forked child (started at fork, not exec). LOCK_PERIOD: lock holds were timed on their
 * own period, timing_period x SS_LOCK_TIMING_FACTOR (without it, on timing_period). RWLOCK_STEPS,
 * MUTEX_STEPS: uncontended rwlock read locks and their releases, or normal mutexes' locks and
 * releases, were done by the interposer (glibc's own step on the lock word, checked at start:
 * preload/lock_steps.h), not forwarded to glibc. NO_UNWINDER: stacks were asked for, but no unwinder
 * could be loaded (libgcc_s.so.1 neither by name, beside the program's libc, nor in the system's
 * library directories): the profile has no stacks, and the report says so. ATTACHED: the profile
 * covers a window of the process's life that `stallscope attach` opened (an SS_REC_ATTACH record
 * follows the PROCESS record); PROCESS's start is the window's start. HEAP_UNCHECKED: glibc's
 * chunk size words did not read as expected at start (preload/glibc_check.c): every allocator call
 * was treated as another allocator's (no size word read, large calls always timed).
 * ARENAS_UNREAD: heaps of huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb): cross-thread frees
 * were not measured. SMALL_BY_COUNT: allocation requests below SS_STACK_BYTES_FROM bytes were
 * sampled for their stacks by count alone, not by bytes (glibc's allocator).
 * TIMING_LONGER: an allocator function's sampling period lengthened SS_TIMING_LONGER_FACTOR-fold
 * (16) in a thread once the thread had timed enough of its calls (2048 by default) since it began
 * or last began a phase; its later timed calls are weighted (struct ss_fn_stats). */
#define SS_PROCESS_FLAGS(X)                                                                                  \
    X(FORKED, 1u) X(LOCK_PERIOD, 2u) X(RWLOCK_STEPS, 4u) X(MUTEX_STEPS, 8u) X(NO_UNWINDER, 16u) X(ATTACHED, 32u) \
    X(HEAP_UNCHECKED, 64u) X(ARENAS_UNREAD, 128u) X(SMALL_BY_COUNT, 256u) X(TIMING_LONGER, 512u)
#define SS_THREAD_FLAGS(X)                                                                                   \
    X(ENDED, 1u) X(MAIN, 2u) X(LOCKS_OVERFLOW, 4u)                                                           \
    X(SIGNAL_BLOCKED, 8u) /* blocked the sampling signal for part of its life: its running time then comes \
                             from the kernel's CPU clock (samples of kind KERNEL), unclassified */
#define SS_SAMPLING_FLAGS(X)                                                                                 \
    X(MOVED, 1u)     /* the program uses the usual signal: sampling moved to another */                     \
    X(NO_TIMERS, 2u) /* CPU-time timers could not be created: wall samples only */                          \
    X(NO_SIGNAL, 4u) /* no free signal: CPU samples are off */
#define SS_HEAP_FLAGS(X) X(GLIBC, 1u) /* mallinfo2 and malloc_info describe the allocator in use */
/* What the interposer made of the CPython interpreter in the process (SS_REC_PYTHON). */
#define SS_PYTHON_FLAGS(X)                                                                                   \
    X(FRAMES, 1u)          /* its version is known: stacks carry the Python frames (PY_STACK records) */   \
    X(UNKNOWN_VERSION, 2u) /* a version whose structures it does not know: native stacks only */           \
    X(FREE_THREADED, 4u)   /* a free-threaded build (3.13t): native stacks only */                           \
    X(NO_READ, 8u)         /* its memory could not be read safely (process_vm_readv refused) */          \
    X(THREAD_NAMES, 16u)   /* threads' names are read from its threading module (PY_THREAD records) */

#define SS_X(id, bit) SS_PROCESS_##id = bit,
enum ss_process_flag { SS_PROCESS_FLAGS(SS_X) };
#undef SS_X
#define SS_X(id, bit) SS_THREAD_##id = bit,
enum ss_thread_flag { SS_THREAD_FLAGS(SS_X) };
#undef SS_X
#define SS_X(id, bit) SS_SAMPLING_##id = bit,
enum ss_sampling_flag { SS_SAMPLING_FLAGS(SS_X) };
#undef SS_X
#define SS_X(id, bit) SS_HEAP_##id = bit,
enum ss_heap_flag { SS_HEAP_FLAGS(SS_X) };
#undef SS_X
#define SS_X(id, bit) SS_PYTHON_##id = bit,
enum ss_python_flag { SS_PYTHON_FLAGS(SS_X) };
#undef SS_X

/* How the interposer came to record a window of a running process (SS_REC_ATTACH). */
#define SS_ATTACH_HOWS(X)                                                                                    \
    X(PAUSED, 1, "paused") /* started by `stallscope run --paused`, switched on by `stallscope attach` */  \
    X(INJECTED, 2, "injected") /* started without stallscope: attach loaded the interposer with ptrace */

enum ss_attach_how {
#define SS_X(id, value, name) SS_ATTACH_##id = value,
    SS_ATTACH_HOWS(SS_X)
#undef SS_X
};

/* ---- Sizes ---- */

/* Request-size histogram: buckets 0..31 hold sizes 8*i+1 .. 8*(i+1) (bucket 0 also holds size 0);
 * bucket 32+k holds sizes 2^(8+k)+1 .. 2^(9+k), k = 0..55. */
#define SS_SIZE_FINE_BUCKETS 32u
#define SS_SIZE_BUCKETS 88u

/* Latency histogram: bucket k holds calls of [2^k, 2^(k+1)) ns; bucket 0 also holds 0 ns. Counts
 * are estimates of all calls: a sampled call adds the sampling period, an always-timed call 1. */
#define SS_LAT_BUCKETS 40u

/* Lock holds are timed on a sample, one acquisition in `timing_period` on average, or, in files
 * with SS_PROCESS_LOCK_PERIOD (written by older interposers, whose allocator calls were timed
 * 1 in 32), in `timing_period` x this factor (one in 1 with exact timing). Hold times are
 * ratio estimates (timed hold ticks / timed holds x acquisitions), whatever the period. */
#define SS_LOCK_TIMING_FACTOR 8u
/* TIMING_LONGER: how many times longer an allocator function's sampling period grows in a thread
 * once the thread has timed enough of its calls (preload/alloc.c, struct ss_alloc_thread). */
#define SS_TIMING_LONGER_FACTOR 16u
#define SS_STACK_BYTES_FROM 1000u /* SMALL_BY_COUNT: the byte-sampled requests' smallest size */
#define SS_LOCK_PERIOD_MAX (1u << 31) /* the product, capped (timing_period may be up to 2^32-1) */
/* struct ss_sample's `syscall` of a wall sample whose system call could not be read: a process
 * made non-dumpable (setuid to another user: mariadbd --user) owns its /proc files as root. */
#define SS_SYSCALL_UNKNOWN 0xFFFFu

/* Call stacks hold at most this many frames (innermost first, the interposer's own frames cut). */
#define SS_STACK_MAX_FRAMES 64u
/* A stack's Python frames (SS_REC_PY_STACK): at most this many, the innermost kept. */
#define SS_PY_MAX_FRAMES 64u
/* A code object's strings and line table are cut at these sizes (SS_REC_PY_CODE). */
#define SS_PY_STRING_MAX 1024u
#define SS_PY_THREAD_NAME_MAX 64u
#define SS_PY_TABLE_MAX 65536u
/* A PY_STACK frame's code id when the code object could not be read when the stack was written. */
#define SS_PY_CODE_UNKNOWN 0xFFFFFFFFu
#define SS_BUILD_ID_MAX 32u
#define SS_PHASE_NAME 64u
#define SS_HEAP_LABEL 64u

/* ---- Records: X(id, type number, size of the fixed part of its payload). What follows the
 * fixed part, if anything, is in the comment of its struct. ---- */
#define SS_RECORDS(X)                                                                                        \
    X(PROCESS, 1, sizeof(struct ss_process_record))                                                          \
    X(THREAD, 2, sizeof(struct ss_thread_record))                                                            \
    X(FLUSH, 3, sizeof(struct ss_flush_record))                                                              \
    X(END, 4, sizeof(struct ss_end_record))                                                                  \
    X(SUPERVISOR, 5, sizeof(struct ss_supervisor_record))                                                    \
    X(MODULE, 6, sizeof(struct ss_module_record))                                                            \
    X(STACK, 7, sizeof(struct ss_stack_record))                                                              \
    X(ALLOC_SITES, 8, sizeof(struct ss_alloc_sites_record))                                                  \
    X(LOCK_SITES, 9, sizeof(struct ss_lock_sites_record))                                                    \
    X(MODULE_GONE, 10, sizeof(struct ss_module_gone_record))                                                 \
    X(PHASE, 20, sizeof(struct ss_phase_record))                                                             \
    X(HEAP, 21, sizeof(struct ss_heap_record))                                                               \
    X(SAMPLING, 22, sizeof(struct ss_sampling_record))                                                       \
    X(SAMPLES, 23, sizeof(struct ss_samples_record))                                                         \
    X(CROSS_FREES, 24, 0)                                                                                    \
    X(FOLDED, 25, sizeof(struct ss_folded_record))                                                           \
    X(SCHED, 26, sizeof(struct ss_sched_record))                                                             \
    X(WAITS, 28, sizeof(struct ss_waits_record))                                                             \
    X(ATTACH, 29, sizeof(struct ss_attach_record))                                                           \
    X(PYTHON, 30, sizeof(struct ss_python_record))                                                           \
    X(PY_CODE, 31, sizeof(struct ss_py_code_record))                                                         \
    X(PY_STACK, 32, sizeof(struct ss_py_stack_record))                                                       \
    X(TITLE, 33, sizeof(struct ss_title_record))                                                             \
    X(PY_THREAD, 40, sizeof(struct ss_py_thread_record))

enum ss_record_type {
#define SS_X(id, number, size) SS_REC_##id = number,
    SS_RECORDS(SS_X)
#undef SS_X
};

/* The entries that follow a record's fixed part (and the file and record headers), whose sizes
 * the reader needs: X(id, struct). */
#define SS_PARTS(X)                                                                                          \
    X(FILE_HEADER, struct ss_file_header)                                                                    \
    X(RECORD_HEADER, struct ss_record_header)                                                                \
    X(FN_STATS, struct ss_fn_stats)                                                                          \
    X(LOCK_STATS, struct ss_lock_stats)                                                                      \
    X(ALLOC_SITE, struct ss_alloc_site)                                                                      \
    X(LOCK_SITE, struct ss_lock_site)                                                                        \
    X(SAMPLE, struct ss_sample)                                                                              \
    X(CROSS_FREES_ENTRY, struct ss_cross_frees_entry)                                                        \
    X(SCHED_POINT, struct ss_sched_point)                                                                    \
    X(WAIT, struct ss_wait)                                                                                  \
    X(PY_FRAME, struct ss_py_frame)

/* The count and length fields that give a record's size (a reader checks a cut record's header
 * against them): X(record id, struct, field). */
#define SS_LENGTH_FIELDS(X)                                                                                  \
    X(PROCESS, struct ss_process_record, cmdline_len)                                                        \
    X(PROCESS, struct ss_process_record, exe_len)                                                            \
    X(THREAD, struct ss_thread_record, nlocks)                                                               \
    X(MODULE, struct ss_module_record, build_id_len)                                                         \
    X(MODULE, struct ss_module_record, path_len)                                                             \
    X(STACK, struct ss_stack_record, depth)                                                                  \
    X(ALLOC_SITES, struct ss_alloc_sites_record, count)                                                      \
    X(LOCK_SITES, struct ss_lock_sites_record, count)                                                        \
    X(HEAP, struct ss_heap_record, xml_len)                                                                  \
    X(SAMPLES, struct ss_samples_record, count)                                                              \
    X(WAITS, struct ss_waits_record, count)                                                                  \
    X(SCHED, struct ss_sched_record, count)                                                                  \
    X(PY_CODE, struct ss_py_code_record, name_len)                                                           \
    X(PY_CODE, struct ss_py_code_record, qualname_len)                                                       \
    X(PY_CODE, struct ss_py_code_record, file_len)                                                           \
    X(PY_CODE, struct ss_py_code_record, table_len)                                                          \
    X(PY_STACK, struct ss_py_stack_record, count)                                                            \
    X(TITLE, struct ss_title_record, len)                                                                    \
    X(PY_THREAD, struct ss_py_thread_record, name_len)

struct ss_file_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size; /* sizeof(struct ss_file_header) */
    uint32_t byte_order;  /* SS_BYTE_ORDER_MARK */
    uint32_t crc;         /* CRC-32 of the 20 bytes before it */
};

struct ss_record_header {
    uint32_t type;
    uint32_t size; /* payload bytes, not counting this header or the padding to 8 */
    uint32_t crc;  /* CRC-32 of type and size (the 8 bytes before it) followed by the payload */
    uint32_t reserved;
};

/* SS_REC_PROCESS: once, first record. Followed by cmdline_len bytes of NUL-separated arguments and
 * exe_len bytes of the executable's path (no terminators counted). */
struct ss_process_record {
    uint32_t pid;
    uint32_t ppid;
    uint64_t start_realtime_ns;
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC */
    uint64_t start_ticks;   /* the tick counter (TSC, or monotonic ns without one) at start_mono_ns */
    uint64_t ticks_per_sec; /* calibrated at start; FLUSH/END pairs refine it */
    uint32_t ncpus;
    uint32_t timing;        /* enum ss_timing */
    uint32_t timing_period; /* mean 1-in-N sampling period when SS_TIMING_SAMPLED */
    uint32_t flags;         /* SS_PROCESS_* */
    char libc_version[32];
    char allocator[64]; /* the file that provides the next malloc: libc.so.6, libjemalloc.so.2, ... */
    uint32_t cmdline_len;
    uint32_t exe_len;
};

/* Durations are measured in two strata: calls likely to be slow (large requests, frees of large
 * chunks) are always timed (exact_*); the others on a random 1-in-N sample (timed_*). The estimated
 * total is exact_ticks + timed_ticks * (calls - exact_calls) / timed_calls. A call timed while its
 * function's period was w times timing_period (TIMING_LONGER) counts w times in timed_calls and
 * its ticks w times in timed_ticks, so the estimate is the same. */
struct ss_fn_stats {
    uint64_t calls;
    uint64_t bytes;       /* requested; 0 for free */
    uint64_t timed_calls; /* sampled calls whose duration was measured (weighted: above) */
    uint64_t timed_ticks; /* their summed duration (weighted) */
    uint64_t exact_calls; /* calls always timed */
    uint64_t exact_ticks; /* their summed duration */
};

struct ss_lock_stats {
    uint64_t address;
    uint32_t kind;    /* enum ss_lock_kind */
    uint32_t threads; /* in a FOLDED record: how many of the group's threads took it; else 0 */
    uint64_t acquisitions;
    uint64_t contended; /* acquisitions that had to wait (a stepped mutex's: that slept) */
    uint64_t wait_ticks;
    uint64_t max_wait_ticks;
    uint64_t timed_holds; /* holds whose length was measured */
    uint64_t hold_ticks;
};

/* SS_REC_THREAD: cumulative statistics of one thread, followed by nlocks struct ss_lock_stats. */
struct ss_thread_record {
    uint32_t serial; /* unique per process, in order of appearance; tids may be reused */
    uint32_t tid;
    uint32_t flags; /* SS_THREAD_* */
    uint32_t nlocks;
    char name[16];
    /* A thread started through pthread_create: its start is no later than its CPU clock's
     * (record time - CPU time so far) and cpu_ns counts from clone; the main thread and threads
     * met at their first call: both count from their record's start. So cpu_ns <= its life. */
    uint64_t start_mono_ns;
    uint64_t end_mono_ns; /* 0 while running */
    uint64_t cpu_ns;
    uint64_t lock_wait_ticks;
    struct ss_fn_stats fn[SS_FN_COUNT];
    uint64_t size_hist[SS_SIZE_BUCKETS];
    uint64_t lat_hist[SS_GRP_COUNT][SS_LAT_BUCKETS];
};

/* SS_REC_FLUSH: ends every flush; pairs of (ticks, mono_ns) calibrate the tick rate. */
struct ss_flush_record {
    uint64_t seq;
    uint64_t mono_ns;
    uint64_t ticks;
    uint64_t reserved;
};

/* SS_REC_END: the process image ended cleanly (exit, return from main, _exit, or exec). */
struct ss_end_record {
    uint32_t how; /* enum ss_end_how */
    int32_t status;
    uint64_t mono_ns;
    uint64_t ticks;
};

/* SS_REC_SUPERVISOR: appended by `stallscope run` after waiting for the launched process. */
struct ss_supervisor_record {
    int32_t exit_code; /* -1 when killed by a signal */
    int32_t signal;    /* 0 when it exited */
    uint32_t core_dumped;
    uint32_t reserved;
    uint64_t wall_ns; /* as measured by the supervisor */
};

/* SS_REC_MODULE: an object loaded in the process (written once when first seen, and again if it
 * is seen at another address). Addresses inside [lo, hi) belong to it; the file-relative address of
 * a pc is pc - bias. Followed by build_id_len bytes of GNU build id and path_len bytes of path. */
struct ss_module_record {
    uint64_t bias; /* load bias (dlpi_addr) */
    uint64_t lo;   /* lowest address of its PT_LOAD segments, after relocation */
    uint64_t hi;   /* one past the highest */
    uint64_t seen_mono_ns;
    uint32_t build_id_len;
    uint32_t path_len;
};

/* SS_REC_MODULE_GONE: the module of the index-th MODULE record in the file (counting from 0) was
 * found unloaded at mono_ns (right after a dlclose, or at a flush for unloads the interposer did
 * not see happen). Addresses of stacks first taken after that belong to another module. */
struct ss_module_gone_record {
    uint32_t index;
    uint32_t reserved;
    uint64_t mono_ns;
};

/* SS_REC_STACK: stack `id` (once per id), followed by depth return addresses, innermost first.
 * The first address is the return address into the code that called the allocator. */
struct ss_stack_record {
    uint32_t id;
    uint32_t depth;
    uint64_t first_mono_ns; /* when the stack was first taken */
};

/* SS_REC_ALLOC_SITES: cumulative statistics of every allocation site seen so far; the reader
 * keeps the last record. Each sampled call of size s is taken with probability
 * p(s) = 1 - (1 - 1/count_period) * exp(-s / mean_bytes) and weighted by 1/p(s). Followed by
 * count x struct ss_alloc_site. */
struct ss_alloc_sites_record {
    uint32_t count;        /* entries that follow */
    uint32_t count_period; /* the count-based rate: one call in count_period (0: off) */
    uint64_t mean_bytes;   /* the mean of the exponential byte intervals (0: off) */
    uint64_t dropped;      /* samples lost because the stack table was full */
};

struct ss_alloc_site {
    uint32_t stack; /* a stack id */
    uint32_t fn;    /* enum ss_fn */
    uint64_t samples;
    uint64_t sampled_bytes;
    uint64_t weight_q16; /* sum of 1/p over the samples, in units of 2^-16: estimated calls */
    uint64_t est_bytes;  /* sum of s/p */
    uint64_t est_ticks;  /* sum of (duration of the sampled call)/p */
};

/* SS_REC_LOCK_SITES: cumulative stacks of contended lock acquisitions; the reader keeps the last
 * record. A thread takes at most one waiter stack and one holder stack per min_interval_ns: the
 * counts are of sampled events, and the report scales them to the lock's exact totals. Followed by
 * count x struct ss_lock_site. */
struct ss_lock_sites_record {
    uint32_t count;
    uint32_t reserved;
    uint64_t min_interval_ns;
};

struct ss_lock_site {
    uint64_t address;
    uint32_t kind;  /* enum ss_lock_kind */
    uint32_t role;  /* enum ss_lock_role */
    uint32_t stack; /* a stack id */
    uint32_t reserved;
    uint64_t events;     /* sampled contended acquisitions (waiter) or releases with waiters (holder) */
    uint64_t wait_ticks; /* their waits (waiter) */
};

/* SS_REC_PHASE: a phase of one thread that ended, with the allocator activity of that thread
 * between its begin and end (counters as in the thread record, as differences). */
struct ss_phase_record {
    uint32_t tid;
    uint32_t depth;       /* 0 for an outermost phase */
    uint32_t heap_before; /* sequence number of the snapshot taken at begin (0: none) */
    uint32_t heap_after;  /* and at end */
    uint64_t begin_mono_ns;
    uint64_t end_mono_ns;
    char name[SS_PHASE_NAME];
    struct ss_fn_stats fn[SS_FN_COUNT];
    uint64_t lat_hist[SS_GRP_COUNT][SS_LAT_BUCKETS];
};

/* SS_REC_HEAP: a heap snapshot: glibc's mallinfo2 (summed over arenas), the process's resident
 * size, and the raw malloc_info XML (per arena and bin), which the reader parses. Followed by
 * xml_len bytes of XML. */
struct ss_heap_record {
    uint32_t seq; /* 1, 2, ... in order of taking */
    uint32_t tid; /* the thread that took it */
    uint64_t mono_ns;
    uint64_t duration_ns; /* how long taking it took */
    uint64_t rss_bytes;
    uint64_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
    char label[SS_HEAP_LABEL];
    uint32_t flags; /* SS_HEAP_* */
    uint32_t xml_len;
};

/* SS_REC_SAMPLING: how thread-state sampling ran (cumulative; the last one wins). */
struct ss_sampling_record {
    uint32_t cpu_hz;    /* CPU samples per second of each thread's CPU time (0: off) */
    uint32_t wall_hz;   /* wall-clock samples per second of threads that are not running (0: off) */
    int32_t signal;     /* the signal the CPU timers deliver (0: none) */
    int32_t moved_from; /* the signal given up because the program installed a handler for it (0: none) */
    uint32_t flags;     /* SS_SAMPLING_* */
    uint32_t reserved;
    uint64_t cpu_samples;
    uint64_t wall_samples;
    uint64_t dropped; /* samples lost to a full buffer */
};

/* SS_REC_SAMPLES: the samples of one thread taken since the previous SAMPLES record of that thread
 * (appended). Followed by count x struct ss_sample. */
struct ss_samples_record {
    uint32_t serial; /* the thread record's serial */
    uint32_t count;
};

struct ss_sample {
    uint64_t mono_ns;
    uint64_t pc;        /* cpu: the interrupted instruction; wall: the user pc in the system call */
    uint32_t stack;     /* stack id + 1 of the callers (cpu: unwound; wall: scanned), 0: none */
    uint32_t weight_us; /* the thread time it stands for: CPU time since the last CPU sample, or
                           wall time since the last wall sample */
    uint8_t kind;       /* enum ss_sample_kind */
    uint8_t state;      /* wall: the state letter of /proc/PID/task/TID/stat (S, D, T, ...); cpu: 0 */
    uint16_t syscall;   /* wall: the system call number + 1 (0: not in a system call) */
    uint32_t arg;       /* wall: low 32 bits of the system call's second argument (a futex's op) */
    uint64_t object;    /* the system call's first argument (a futex: the address of the word it waits
                           on or wakes): wall: as /proc read it (0: not in a system call); cpu: the
                           interrupted RDI, which is that argument only when the pc is at or right
                           after a `syscall` instruction (the reader of the profile checks); kernel: 0 */
};

/* SS_REC_SCHED: what the kernel says a thread did between two looks of the sampler thread
 * (/proc/self/task/TID/schedstat and stat, read without root): appended like SAMPLES, followed by
 * count x struct ss_sched_point in time order. Each point holds the thread's figures since its
 * previous point (its first point: since the thread began, including the run-queue delay before
 * its first instruction), so the points of a folded group, written under the group's serial, add
 * up to the group's totals. */
struct ss_sched_record {
    uint32_t serial; /* the thread record's serial */
    uint32_t count;
};

struct ss_sched_point {
    uint64_t mono_ns;      /* when the sampler looked */
    uint64_t exec_ns;      /* time on a CPU since the previous point (schedstat field 1) */
    uint64_t run_delay_ns; /* time runnable, waiting on a run queue for a CPU (schedstat field 2) */
    uint32_t minflt;       /* minor page faults (stat field 10) */
    uint32_t majflt;       /* major page faults (stat field 12) */
    uint32_t stime_us;     /* system CPU time (stat field 15, in clock ticks, as microseconds) */
    uint32_t switches;     /* times put on a CPU (schedstat field 3) */
};

/* SS_REC_CROSS_FREES: cumulative; per thread, its sampled frees whose chunk the arena check
 * could place, and those that belonged to another arena than the thread's own (glibc only: the
 * chunk's header says which arena holds it). The reader keeps the last record. The payload is
 * only entries: one or more struct ss_cross_frees_entry. */
struct ss_cross_frees_entry {
    uint32_t serial; /* a thread record's serial */
    uint32_t reserved;
    uint64_t checked; /* sampled frees of arena chunks, with the thread's own arena known */
    uint64_t cross;   /* of those, chunks of another arena: allocated by another thread */
};

/* SS_REC_FOLDED: cumulative, the last one per serial wins. Threads that ended before any
 * flush wrote them, beyond the budget of those written on their own (docs/FORMAT.md, "Bounds"),
 * summed per thread name: struct ss_folded_record, then a thread record (struct
 * ss_thread_record: the group's own serial, tid 0, flags ENDED plus the union of the threads'
 * other flags, the name, the first start and the last end, the summed counters) and its nlocks
 * struct ss_lock_stats, each with how many of the group's threads took that lock (so counts of
 * distinct threads survive folding). Samples of the folded threads are written under the group's serial. */
struct ss_folded_record {
    uint32_t threads;    /* how many threads the group holds */
    uint32_t allocating; /* how many of them called the allocator */
    uint64_t life_ns; /* their lives, summed */
};

/* SS_REC_WAITS: the blocking waits of one thread since the previous WAITS record of that thread
 * (appended), each with the other end of its wait-for edge. Followed by count x struct ss_wait.
 * Recorded only on the slow paths (a lock that was taken, a condition or semaphore wait, a join). */
struct ss_waits_record {
    uint32_t serial; /* the thread record's serial */
    uint32_t count;
    uint64_t dropped; /* waits of this thread lost to a full buffer since its previous WAITS record */
};

struct ss_wait {
    uint64_t start_mono_ns;
    uint64_t end_mono_ns;
    uint64_t object;    /* the lock's, condition variable's or semaphore's address; join: 0 */
    uint32_t other_tid; /* lock: its owner when the wait began; condition, semaphore: the thread that
                           woke it; join: the joined thread (0: unknown) */
    uint8_t kind;       /* enum ss_wait_kind */
    uint8_t lock_kind;  /* lock: enum ss_lock_kind; else 0 */
    uint16_t notification; /* condition, semaphore: the notification that woke it, 0 when unknown
                              (and in profiles written before 2026-11-25): the waker's sequence
                              number modulo SS_NOTIFY_SEQ_MASK, from 1 (waits woken by one
                              notification share it), plus SS_NOTIFY_BROADCAST when it was a
                              pthread_cond_broadcast; condition: plus SS_NOTIFY_REWAIT when the
                              thread began this wait without having released the mutex since its
                              previous wait on the same condition variable returned (that wake-up
                              found no work); futex: how long before the wait's end its waker's
                              FUTEX_WAKE began, in microseconds, 1 to SS_WOKEN_US_MAX (that or
                              more), 0 when unknown (and in profiles written before 2026-11-26);
                              lock of kind mutex: the same for the wake of the release that let it
                              in (0 also in profiles written before 2026-11-26 19:00 UTC); other
                              locks, join: 0 */
};

/* struct ss_wait's notification: the sequence part and the flags. */
#define SS_NOTIFY_SEQ_MASK 0x3fffu
#define SS_NOTIFY_REWAIT 0x4000u
#define SS_NOTIFY_BROADCAST 0x8000u
/* A futex or mutex wait's notification field: microseconds from its waker's wake to its end, at
 * most. */
#define SS_WOKEN_US_MAX 0xffffu

/* SS_REC_ATTACH: the profile holds one window of a process that ran before it (flag ATTACHED);
 * written once, right after the PROCESS record, whose start is the window's. The window ends
 * with the file's END record (how DETACH, or the process's own end) or, cut short, its last
 * FLUSH. What happened before the window is not in the file: allocations made before it, locks
 * held when it began, waits in progress (counted from the first event seen in the window). */
struct ss_attach_record {
    uint64_t process_start_mono_ns; /* when the process (this image) began */
    uint64_t window_start_mono_ns;  /* when recording was switched on */
    uint32_t how;                   /* enum ss_attach_how */
    uint32_t window;                /* 1 for the process's first window, 2 for the next, ... */
};

/* SS_REC_PYTHON: once per file, before any PY_CODE or PY_STACK record, in a process that runs
 * CPython (its `_PyRuntime` is among the loaded objects' symbols). */
struct ss_python_record {
    uint32_t version; /* PY_VERSION_HEX (0x030b02f0 for 3.11.2); 0 when not known */
    uint32_t flags;   /* enum ss_python_flag */
};

/* SS_REC_PY_CODE: a Python code object that a PY_STACK record names, written before it, once per
 * id. Followed by name_len bytes of its name (co_name), qualname_len of its qualified name
 * (co_qualname, 3.11 and later; 0 before), file_len of its file (co_filename), all UTF-8, then
 * table_len bytes of its line table as the interpreter keeps it: co_lnotab (3.8, 3.9),
 * co_linetable (3.10: ranges of bytes; 3.11 and later: the location table). Strings longer than
 * SS_PY_STRING_MAX and tables longer than SS_PY_TABLE_MAX bytes are cut. */
struct ss_py_code_record {
    uint32_t id;
    int32_t first_line; /* co_firstlineno */
    uint32_t name_len;
    uint32_t qualname_len;
    uint32_t file_len;
    uint32_t table_len;
};

/* SS_REC_PY_STACK: the Python frames of a stack (a STACK record written before it, once per id),
 * innermost first. Followed by count x struct ss_py_frame. */
struct ss_py_stack_record {
    uint32_t stack; /* the STACK record's id */
    uint32_t count; /* 1 .. SS_PY_MAX_FRAMES */
};

/* One Python frame: its code object and the byte offset of the instruction it runs (in a caller:
 * its call), from the start of the code's bytecode; -1 before its first instruction. */
struct ss_py_frame {
    uint32_t code;  /* a PY_CODE record's id, or SS_PY_CODE_UNKNOWN */
    int32_t offset; /* bytes */
    uint32_t flags; /* SS_PY_FRAME_ENTRY: the oldest frame of the frames one evaluation loop runs */
    uint32_t reserved;
};
#define SS_PY_FRAME_ENTRY 1u

/* SS_REC_TITLE: the title the process gave itself, as /proc/self/cmdline shows it when a batch
 * is written, where it differs from the command line it started with (PostgreSQL's
 * `postgres: checkpointer`, setproctitle): written when it changes, the last one wins. Followed
 * by `len` bytes of NUL-separated words, the NULs that pad the argument area cut, at most
 * SS_TITLE_MAX. */
struct ss_title_record {
    uint64_t mono_ns; /* when it was read */
    uint32_t len;
    uint32_t reserved;
};
#define SS_TITLE_MAX 4096u
/* SS_REC_PY_THREAD: the name Python gives a thread (`threading.Thread(name=...)`, a pool's
 * `ThreadPoolExecutor-0_0`), written after its THREAD record whenever that is written; the last
 * one of a serial wins. Followed by name_len bytes of UTF-8, at most SS_PY_THREAD_NAME_MAX. */
struct ss_py_thread_record {
    uint32_t serial; /* the THREAD record's */
    uint32_t tid;
    uint32_t name_len;
    uint32_t reserved;
};

/* The layouts are a contract with every profile written so far: a change here changes SS_VERSION.
 * The generated Rust constants carry the same sizes; these pin them on the C side. */
_Static_assert(sizeof(struct ss_file_header) == 24, "file header layout");
_Static_assert(sizeof(struct ss_record_header) == 16, "record header layout");
_Static_assert(sizeof(struct ss_process_record) == 160, "process record layout");
_Static_assert(sizeof(struct ss_fn_stats) == 48, "function stats layout");
_Static_assert(sizeof(struct ss_lock_stats) == 64, "lock stats layout");
_Static_assert(sizeof(struct ss_thread_record) == 2848, "thread record layout");
_Static_assert(sizeof(struct ss_flush_record) == 32, "flush record layout");
_Static_assert(sizeof(struct ss_end_record) == 24, "end record layout");
_Static_assert(sizeof(struct ss_supervisor_record) == 24, "supervisor record layout");
_Static_assert(sizeof(struct ss_module_record) == 40, "module record layout");
_Static_assert(sizeof(struct ss_stack_record) == 16, "stack record layout");
_Static_assert(sizeof(struct ss_module_gone_record) == 16, "module gone record layout");
_Static_assert(sizeof(struct ss_alloc_sites_record) == 24, "alloc sites record layout");
_Static_assert(sizeof(struct ss_alloc_site) == 48, "alloc site layout");
_Static_assert(sizeof(struct ss_lock_sites_record) == 16, "lock sites record layout");
_Static_assert(sizeof(struct ss_lock_site) == 40, "lock site layout");
_Static_assert(sizeof(struct ss_phase_record) == 2176, "phase record layout");
_Static_assert(sizeof(struct ss_heap_record) == 184, "heap record layout");
_Static_assert(sizeof(struct ss_sampling_record) == 48, "sampling record layout");
_Static_assert(sizeof(struct ss_samples_record) == 8, "samples record layout");
_Static_assert(sizeof(struct ss_sample) == 40, "sample layout");
_Static_assert(sizeof(struct ss_sched_record) == 8, "sched record layout");
_Static_assert(sizeof(struct ss_sched_point) == 40, "sched point layout");
_Static_assert(sizeof(struct ss_cross_frees_entry) == 24, "cross frees entry layout");
_Static_assert(sizeof(struct ss_folded_record) == 16, "folded record layout");
_Static_assert(sizeof(struct ss_waits_record) == 16, "waits record layout");
_Static_assert(sizeof(struct ss_wait) == 32, "wait layout");
_Static_assert(sizeof(struct ss_attach_record) == 24, "attach record layout");
_Static_assert(sizeof(struct ss_python_record) == 8, "python record layout");
_Static_assert(sizeof(struct ss_py_code_record) == 24, "python code record layout");
_Static_assert(sizeof(struct ss_py_stack_record) == 8, "python stack record layout");
_Static_assert(sizeof(struct ss_py_frame) == 16, "python frame layout");
_Static_assert(sizeof(struct ss_title_record) == 16, "title record layout");
_Static_assert(sizeof(struct ss_py_thread_record) == 16, "python thread record layout");

#endif
