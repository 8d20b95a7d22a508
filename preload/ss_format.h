/* The stallscope profile file format, version 2. Shared by the interposer (writer) and documented
 * in docs/FORMAT.md; the Rust reader (src/profile/) mirrors these layouts and must be changed with them.
 *
 * A file is a file header followed by records. All integers are little-endian (the only byte order
 * the interposer runs on); every record starts on an 8-byte boundary. Each record carries a CRC-32
 * (IEEE, as zlib) of its type, size and payload so that damage is detected rather than misread.
 *
 * Thread and lock records are cumulative: the writer rewrites a thread's record at each flush in
 * which it changed, and the reader keeps the last one per thread serial. A flush ends with an
 * SS_REC_FLUSH record; a clean exit writes SS_REC_END. A file that ends after FLUSH but without END
 * is a partial profile (the process was killed or crashed); a file that ends anywhere else is
 * truncated. */
#ifndef STALLSCOPE_FORMAT_H
#define STALLSCOPE_FORMAT_H

#include <stdint.h>

#define SS_MAGIC "STALLSCP" /* 8 bytes, no terminator in the file */
#define SS_VERSION 2u
#define SS_BYTE_ORDER_MARK 0x01020304u

/* Allocator functions, counted separately. */
enum ss_fn {
    SS_FN_MALLOC = 0,
    SS_FN_CALLOC,
    SS_FN_REALLOC,
    SS_FN_REALLOCARRAY,
    SS_FN_FREE,
    SS_FN_POSIX_MEMALIGN,
    SS_FN_ALIGNED_ALLOC,
    SS_FN_MEMALIGN,
    SS_FN_VALLOC,
    SS_FN_PVALLOC,
    SS_FN_COUNT
};

/* Latency histograms are kept per function group (the report's contract groups). */
enum ss_group { SS_GRP_MALLOC = 0, SS_GRP_CALLOC, SS_GRP_REALLOC, SS_GRP_FREE, SS_GRP_ALIGNED, SS_GRP_COUNT };

/* Request-size histogram: buckets 0..31 hold sizes 8*i+1 .. 8*(i+1) (bucket 0 also holds size 0);
 * bucket 32+k holds sizes 2^(8+k)+1 .. 2^(9+k), k = 0..55. */
#define SS_SIZE_FINE_BUCKETS 32u
#define SS_SIZE_BUCKETS 88u

/* Latency histogram: bucket k holds calls of [2^k, 2^(k+1)) ns; bucket 0 also holds 0 ns. Counts
 * are estimates of all calls: a sampled call adds the sampling period, an always-timed call 1. */
#define SS_LAT_BUCKETS 40u

enum ss_record_type {
    SS_REC_PROCESS = 1,
    SS_REC_THREAD = 2,
    SS_REC_FLUSH = 3,
    SS_REC_END = 4,
    SS_REC_SUPERVISOR = 5,
    SS_REC_MODULE = 6,     /* a loaded object: struct ss_module_record, then build id, then path */
    SS_REC_STACK = 7,      /* a call stack: struct ss_stack_record, then depth x uint64_t pcs */
    SS_REC_ALLOC_SITES = 8, /* struct ss_alloc_sites_record, then count x struct ss_alloc_site */
    SS_REC_LOCK_SITES = 9,  /* struct ss_lock_sites_record, then count x struct ss_lock_site */
    SS_REC_MODULE_GONE = 10 /* struct ss_module_gone_record: a module was unloaded */
};

/* Call stacks hold at most this many frames (innermost first, the interposer's own frames cut). */
#define SS_STACK_MAX_FRAMES 64u
#define SS_BUILD_ID_MAX 32u

enum ss_lock_kind { SS_LOCK_MUTEX = 1, SS_LOCK_RWLOCK_READ = 2, SS_LOCK_RWLOCK_WRITE = 3, SS_LOCK_SPIN = 4 };

enum ss_end_how { SS_END_EXIT = 1, SS_END_UNDERSCORE_EXIT = 2, SS_END_EXEC = 3, SS_END_DESTRUCTOR = 4 };

/* Timing modes: every call timed, or a random 1-in-N sample (counts and bytes are always exact). */
enum ss_timing { SS_TIMING_SAMPLED = 0, SS_TIMING_EXACT = 1 };

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
    uint32_t timing; /* enum ss_timing */
    uint32_t timing_period; /* mean 1-in-N sampling period when SS_TIMING_SAMPLED */
    uint32_t flags;         /* bit 0: forked child (started at fork, not exec) */
    char libc_version[32];
    char allocator[64]; /* the file that provides the next malloc: libc.so.6, libjemalloc.so.2, ... */
    uint32_t cmdline_len;
    uint32_t exe_len;
};

/* Durations are measured in two strata: calls likely to be slow (large requests, frees of large
 * chunks) are always timed (exact_*); the others on a random 1-in-N sample (timed_*). The estimated
 * total is exact_ticks + timed_ticks * (calls - exact_calls) / timed_calls. */
struct ss_fn_stats {
    uint64_t calls;
    uint64_t bytes;       /* requested; 0 for free */
    uint64_t timed_calls; /* sampled calls whose duration was measured */
    uint64_t timed_ticks; /* their summed duration */
    uint64_t exact_calls; /* calls always timed */
    uint64_t exact_ticks; /* their summed duration */
};

struct ss_lock_stats {
    uint64_t address;
    uint32_t kind; /* enum ss_lock_kind */
    uint32_t reserved;
    uint64_t acquisitions;
    uint64_t contended; /* acquisitions that had to wait */
    uint64_t wait_ticks;
    uint64_t max_wait_ticks;
    uint64_t timed_holds; /* holds whose length was measured */
    uint64_t hold_ticks;
};

/* SS_REC_THREAD: cumulative statistics of one thread, followed by nlocks struct ss_lock_stats. */
struct ss_thread_record {
    uint32_t serial; /* unique per process, in order of appearance; tids may be reused */
    uint32_t tid;
    uint32_t flags; /* bit 0: ended; bit 1: main thread; bit 2: lock table overflowed */
    uint32_t nlocks;
    char name[16];
    uint64_t start_mono_ns;
    uint64_t end_mono_ns; /* 0 while running */
    uint64_t cpu_ns;
    uint64_t lock_wait_ticks;
    struct ss_fn_stats fn[SS_FN_COUNT];
    uint64_t size_hist[SS_SIZE_BUCKETS];
    uint64_t lat_hist[SS_GRP_COUNT][SS_LAT_BUCKETS];
};

#define SS_THREAD_ENDED 1u
#define SS_THREAD_MAIN 2u
#define SS_THREAD_LOCKS_OVERFLOW 4u
/* The thread blocked the sampling signal for part of its life: its running time then comes from
 * the kernel's CPU clock (samples of kind SS_SAMPLE_KERNEL, ss_format_samples.h), unclassified. */
#define SS_THREAD_SIGNAL_BLOCKED 8u

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
 * p(s) = 1 - (1 - 1/count_period) * exp(-s / mean_bytes) and weighted by 1/p(s). */
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
    uint64_t weight_q16;  /* sum of 1/p over the samples, in units of 2^-16: estimated calls */
    uint64_t est_bytes;   /* sum of s/p */
    uint64_t est_ticks;   /* sum of (duration of the sampled call)/p */
};

/* SS_REC_LOCK_SITES: cumulative stacks of contended lock acquisitions; the reader keeps the last
 * record. A thread takes at most one waiter stack and one holder stack per min_interval_ns: the
 * counts are of sampled events, and the report scales them to the lock's exact totals. */
struct ss_lock_sites_record {
    uint32_t count;
    uint32_t reserved;
    uint64_t min_interval_ns;
};

enum ss_lock_role {
    SS_ROLE_WAITER = 1, /* the stack of a thread that had to wait for the lock */
    SS_ROLE_HOLDER = 2  /* the stack of a thread releasing the lock while others waited for it */
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

/* SS_REC_CROSS_FREES (24): cumulative; per thread, its sampled frees whose chunk the arena check
 * could place, and those that belonged to another arena than the thread's own (glibc only: the
 * chunk's header says which arena holds it). The reader keeps the last record. */
#define SS_REC_CROSS_FREES 24u

struct ss_cross_frees_entry {
    uint32_t serial; /* a thread record's serial */
    uint32_t reserved;
    uint64_t checked; /* sampled frees of arena chunks, with the thread's own arena known */
    uint64_t cross;   /* of those, chunks of another arena: allocated by another thread */
};

/* SS_REC_FOLDED (25): cumulative, the last one per serial wins. Threads that ended before any
 * flush wrote them, beyond the budget of those written on their own (docs/FORMAT.md, "Bounds"),
 * summed per thread name: struct ss_folded_record, then a thread record (struct
 * ss_thread_record: the group's own serial, tid 0, flags ENDED plus the union of the threads'
 * other flags, the name, the first start and the last end, the summed counters) and its nlocks
 * struct ss_lock_stats. Samples of the folded threads are written under the group's serial. */
#define SS_REC_FOLDED 25u

struct ss_folded_record {
    uint32_t threads; /* how many threads the group holds */
    uint32_t reserved;
    uint64_t life_ns; /* their lives, summed */
};

/* The reader (src/profile/format.rs) hard-codes these sizes. */
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
_Static_assert(sizeof(struct ss_cross_frees_entry) == 24, "cross frees entry layout");
_Static_assert(sizeof(struct ss_folded_record) == 16, "folded record layout");

#endif
