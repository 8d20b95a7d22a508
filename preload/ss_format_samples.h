/* Profile records for thread-state samples (part of format version 2; see docs/FORMAT.md and
 * docs/STATES.md). The reader mirrors these layouts in src/profile/samples.rs. */
#ifndef STALLSCOPE_FORMAT_SAMPLES_H
#define STALLSCOPE_FORMAT_SAMPLES_H

#include "ss_format.h"

enum {
    SS_REC_SAMPLING = 22, /* struct ss_sampling_record: how sampling ran (cumulative; last wins) */
    SS_REC_SAMPLES = 23   /* struct ss_samples_record, then count x struct ss_sample (appended) */
};

enum ss_sample_kind {
    SS_SAMPLE_CPU = 1, /* the thread's CPU-time timer fired: it was running this instruction */
    SS_SAMPLE_WALL = 2, /* the sampler found the thread not running (read from /proc) */
    SS_SAMPLE_KERNEL = 3 /* the thread ran, by its kernel CPU clock, but blocks the sampling signal:
                            weight only (pc, stack, state, syscall and arg are 0) */
};

#define SS_SAMPLING_MOVED 1u      /* the program uses the usual signal: sampling moved to another */
#define SS_SAMPLING_NO_TIMERS 2u  /* CPU-time timers could not be created: wall samples only */
#define SS_SAMPLING_NO_SIGNAL 4u  /* no free signal: CPU samples are off */

struct ss_sampling_record {
    uint32_t cpu_hz;  /* CPU samples per second of each thread's CPU time (0: off) */
    uint32_t wall_hz; /* wall-clock samples per second of threads that are not running (0: off) */
    int32_t signal;   /* the signal the CPU timers deliver (0: none) */
    int32_t moved_from; /* the signal given up because the program installed a handler for it (0: none) */
    uint32_t flags;   /* SS_SAMPLING_* */
    uint32_t reserved;
    uint64_t cpu_samples;
    uint64_t wall_samples;
    uint64_t dropped; /* samples lost to a full buffer */
};

/* The samples of one thread taken since the previous SAMPLES record of that thread. */
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
};

_Static_assert(sizeof(struct ss_sampling_record) == 48, "sampling record layout");
_Static_assert(sizeof(struct ss_samples_record) == 8, "samples record layout");
_Static_assert(sizeof(struct ss_sample) == 32, "sample layout");

#endif
