/* Profile records for phases and heap snapshots (part of format version 2; see docs/FORMAT.md).
 * Kept apart from ss_format.h only to keep each file about one thing; the reader mirrors these
 * layouts in src/profile/phases.rs. */
#ifndef STALLSCOPE_FORMAT_PHASES_H
#define STALLSCOPE_FORMAT_PHASES_H

#include "ss_format.h"

enum {
    SS_REC_PHASE = 20, /* struct ss_phase_record: a phase that ended */
    SS_REC_HEAP = 21   /* struct ss_heap_record, then xml_len bytes of malloc_info's XML */
};

#define SS_PHASE_NAME 64u
#define SS_HEAP_LABEL 64u

/* A phase of one thread, with the allocator activity of that thread between its begin and end
 * (counters as in the thread record, as differences). */
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

#define SS_HEAP_GLIBC 1u /* mallinfo2 and malloc_info describe the allocator in use */

/* A heap snapshot: glibc's mallinfo2 (summed over arenas), the process's resident size, and the
 * raw malloc_info XML (per arena and bin), which the reader parses. */
struct ss_heap_record {
    uint32_t seq; /* 1, 2, ... in order of taking */
    uint32_t tid; /* the thread that took it */
    uint64_t mono_ns;
    uint64_t duration_ns; /* how long taking it took */
    uint64_t rss_bytes;
    uint64_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
    char label[SS_HEAP_LABEL];
    uint32_t flags;
    uint32_t xml_len;
};

_Static_assert(sizeof(struct ss_phase_record) == 2176, "phase record layout");
_Static_assert(sizeof(struct ss_heap_record) == 184, "heap record layout");

#endif
