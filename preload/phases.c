/* Phases and heap snapshots: the implementation behind include/stallscope.h, plus snapshots at
 * start, at exit, periodically and on SIGUSR2 when asked for. None of this is on the allocation hot
 * path. Records are queued on a lock-free list and written by the next flush. */
#include "ss_internal.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SS_PHASES_MAX 32u
/* A thread's phase mapping: its open phases, then room for the record of the phase that ends. */
#define SS_PHASE_SCRATCH_AT ((SS_PHASES_MAX * sizeof(struct ss_phase_open) + 63u) & ~(size_t)63u)
#define SS_PHASES_MAP (SS_PHASE_SCRATCH_AT + sizeof(struct ss_phase_record))

/* What a phase remembers from its begin: the thread's counters then. */
struct ss_phase_open {
    char name[SS_PHASE_NAME];
    uint32_t heap_before;
    uint64_t begin_mono_ns;
    struct ss_fn_stats fn[SS_FN_COUNT];
    uint64_t lat_hist[SS_GRP_COUNT][SS_LAT_BUCKETS];
};

/* A record waiting for the next flush. */
struct ss_pending {
    struct ss_pending *next;
    size_t map_size;
    uint32_t type;
    uint32_t size;
    unsigned char payload[];
};

SS_FORK_STATE static struct ss_pending *ss_pending_head;
SS_FORK_STATE static uint32_t ss_heap_seq;
static volatile sig_atomic_t ss_snapshot_requested;

static void ss_push_pending(uint32_t type, const void *a, size_t alen, const void *b, size_t blen) {
    size_t map_size = sizeof(struct ss_pending) + alen + blen;
    struct ss_pending *p = ss_map(map_size);
    if (!p) return;
    p->map_size = map_size;
    p->type = type;
    p->size = (uint32_t)(alen + blen);
    memcpy(p->payload, a, alen);
    if (blen) memcpy(p->payload + alen, b, blen);
    struct ss_pending *head = __atomic_load_n(&ss_pending_head, __ATOMIC_RELAXED);
    do {
        p->next = head;
    } while (!__atomic_compare_exchange_n(&ss_pending_head, &head, p, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Called by the flush (one at a time): appends the queued records in the order they were made. */
void ss_phases_append_pending(void) {
    struct ss_pending *list = __atomic_exchange_n(&ss_pending_head, NULL, __ATOMIC_ACQUIRE);
    struct ss_pending *ordered = NULL;
    while (list) {
        struct ss_pending *next = list->next;
        list->next = ordered;
        ordered = list;
        list = next;
    }
    while (ordered) {
        struct ss_pending *next = ordered->next;
        ss_out_append(ordered->type, ordered->payload, ordered->size);
        ss_unmap(ordered, ordered->map_size);
        ordered = next;
    }
}

SS_FORK_TEXT int ss_phases_pending(void) { return __atomic_load_n(&ss_pending_head, __ATOMIC_ACQUIRE) != NULL; }

SS_FORK_TEXT void ss_phases_after_fork_child(void) {
    ss_pending_head = NULL; /* the parent's records: its own flush writes them */
    ss_heap_seq = 0;
}

/* This module's steps, walked by the lifecycle (lifecycle.c). */
const struct ss_steps ss_phases_steps = {.name = "phases", .on_fork_child = ss_phases_after_fork_child};

static void ss_copy_label(char *dst, size_t cap, const char *a, const char *b) {
    size_t n = 0;
    for (; a && *a && n + 1 < cap; a++) dst[n++] = *a;
    for (; b && *b && n + 1 < cap; b++) dst[n++] = *b;
    memset(dst + n, 0, cap - n);
}

static uint64_t ss_rss_bytes(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    const char *p = buf;
    while (*p && *p != ' ') p++; /* field 2 is the resident set, in pages */
    uint64_t pages = 0;
    for (p++; *p >= '0' && *p <= '9'; p++) pages = pages * 10 + (uint64_t)(*p - '0');
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Set while glibc walks the heap for a snapshot (only glibc's code runs, none of the interposer's):
 * a CPU sample then unwinds as in the program's code, and its stack shows the snapshot, which the
 * analysis puts in the state `profiler` (stallscope's own work, not the program's). */
SS_TLS int ss_walking_heap;

/* malloc_info writes to a FILE: one over a mapping of ours (fmemopen), unbuffered, so that the
 * only allocation is the FILE itself (a few hundred bytes, a small-bin request, taken and given
 * back under the guard, never counted). A stdio buffer must not be allocated: a 4 KiB request is
 * a large-bin one, which makes glibc consolidate the fast bins, destroying the very state the
 * snapshot is there to see. A mapping too small for the text (many arenas) is tried again 16
 * times larger; only the pages written are touched. (Not a memory file: that is seven system
 * calls more at every snapshot, its creation the dearest, and a descriptor.) Returns the
 * mapping, `*map_size` long, `*len` bytes of it written. */
static unsigned char *ss_malloc_info_xml(size_t *len, size_t *map_size) {
    *len = 0;
    *map_size = 0;
    for (size_t cap = 64u << 10; cap <= 64u << 20; cap *= 16) {
        unsigned char *buf = ss_map(cap);
        if (!buf) return NULL;
        FILE *f = fmemopen(buf, cap, "w");
        if (!f) {
            ss_unmap(buf, cap);
            return NULL;
        }
        setvbuf(f, NULL, _IONBF, 0);
        ss_walking_heap = 1;
        malloc_info(0, f);
        ss_walking_heap = 0;
        long n = ftell(f);
        fclose(f);
        if (n > 0 && (size_t)n < cap - 1) { /* fmemopen keeps a byte for its terminating NUL */
            *len = (size_t)n;
            *map_size = cap;
            return buf;
        }
        ss_unmap(buf, cap);
        if (n <= 0) return NULL;
    }
    return NULL;
}

/* Takes a snapshot now; returns its sequence number. The caller holds the guard. */
static uint32_t ss_take_snapshot(const char *label, const char *suffix) {
    struct ss_heap_record r;
    memset(&r, 0, sizeof r);
    uint64_t start = ss_mono_ns();
    r.seq = __atomic_add_fetch(&ss_heap_seq, 1, __ATOMIC_RELAXED);
    r.tid = (uint32_t)syscall(SYS_gettid);
    ss_copy_label(r.label, sizeof r.label, label, suffix);
    unsigned char *xml = NULL;
    size_t xml_len = 0, xml_map = 0;
    if (!ss_guard_calls) { /* glibc's allocator: its own statistics describe the heap */
        ss_walking_heap = 1;
        struct mallinfo2 mi = mallinfo2();
        ss_walking_heap = 0;
        r.arena = mi.arena;
        r.ordblks = mi.ordblks;
        r.smblks = mi.smblks;
        r.hblks = mi.hblks;
        r.hblkhd = mi.hblkhd;
        r.usmblks = mi.usmblks;
        r.fsmblks = mi.fsmblks;
        r.uordblks = mi.uordblks;
        r.fordblks = mi.fordblks;
        r.keepcost = mi.keepcost;
        r.flags |= SS_HEAP_GLIBC;
        xml = ss_malloc_info_xml(&xml_len, &xml_map);
    }
    r.rss_bytes = ss_rss_bytes();
    r.mono_ns = start;
    r.duration_ns = ss_mono_ns() - start;
    r.xml_len = (uint32_t)xml_len;
    ss_push_pending(SS_REC_HEAP, &r, sizeof r, xml, xml_len);
    if (xml) ss_unmap(xml, xml_map);
    return r.seq;
}

/* The phases part of a node, for a new thread (ss_thread_reset, threads.c): none open; the
 * mapping of open phases, if any, is kept for the next thread. */
void ss_phases_thread_reset(struct ss_thread *t) { t->phases.count = 0; }

/* ---- the public API (include/stallscope.h binds to these when they exist) ---- */

SS_EXPORT void stallscope_impl_heap_snapshot(const char *label) {
    struct ss_thread *t = ss_enter();
    if (!t) return;
    SS_GUARD_BEGIN(saved);
    ss_take_snapshot(label ? label : "snapshot", NULL);
    SS_GUARD_END(saved);
}

SS_EXPORT void stallscope_impl_phase_begin(const char *name) {
    struct ss_thread *t = ss_enter();
    if (!t) return;
    SS_GUARD_BEGIN(saved);
    ss_alloc_phase_begin(t); /* the configured period again: the phase's own samples (alloc.c) */
    if (!t->phases.open) t->phases.open = ss_map(SS_PHASES_MAP);
    if (t->phases.open && t->phases.count < SS_PHASES_MAX) {
        struct ss_phase_open *o = &t->phases.open[t->phases.count];
        ss_copy_label(o->name, sizeof o->name, name ? name : "phase", NULL);
        o->heap_before = ss_take_snapshot("begin ", o->name);
        /* The phase starts after its snapshot, so the snapshot's cost is not in it. */
        o->begin_mono_ns = ss_mono_ns();
        memcpy(o->fn, t->rec.fn, sizeof o->fn);
        ss_alloc_small_into(t, o->fn, NULL);
        memcpy(o->lat_hist, t->rec.lat_hist, sizeof o->lat_hist);
    }
    t->phases.count++; /* deeper than SS_PHASES_MAX: counted, so begins and ends still pair up */
    SS_GUARD_END(saved);
}

SS_EXPORT void stallscope_impl_phase_end(void) {
    struct ss_thread *t = ss_enter();
    if (!t || t->phases.count == 0) return;
    SS_GUARD_BEGIN(saved);
    uint32_t depth = --t->phases.count;
    if (t->phases.open && depth < SS_PHASES_MAX) {
        struct ss_phase_open *o = &t->phases.open[depth];
        /* 2 KB: kept off small thread stacks, in the thread's phase mapping (not in TLS) */
        struct ss_phase_record *rp = (struct ss_phase_record *)((char *)t->phases.open + SS_PHASE_SCRATCH_AT);
#define r (*rp)
        memset(&r, 0, sizeof r);
        r.end_mono_ns = ss_mono_ns();
        r.tid = t->rec.tid;
        r.depth = depth;
        r.heap_before = o->heap_before;
        r.begin_mono_ns = o->begin_mono_ns;
        memcpy(r.name, o->name, sizeof r.name);
        struct ss_fn_stats now[SS_FN_COUNT];
        memcpy(now, t->rec.fn, sizeof now);
        ss_alloc_small_into(t, now, NULL);
        for (int f = 0; f < SS_FN_COUNT; f++) {
            r.fn[f].calls = now[f].calls - o->fn[f].calls;
            r.fn[f].bytes = now[f].bytes - o->fn[f].bytes;
            r.fn[f].timed_calls = now[f].timed_calls - o->fn[f].timed_calls;
            r.fn[f].timed_ticks = now[f].timed_ticks - o->fn[f].timed_ticks;
            r.fn[f].exact_calls = now[f].exact_calls - o->fn[f].exact_calls;
            r.fn[f].exact_ticks = now[f].exact_ticks - o->fn[f].exact_ticks;
        }
        for (int g = 0; g < SS_GRP_COUNT; g++)
            for (uint32_t b = 0; b < SS_LAT_BUCKETS; b++) r.lat_hist[g][b] = t->rec.lat_hist[g][b] - o->lat_hist[g][b];
        r.heap_after = ss_take_snapshot("end ", o->name);
        ss_push_pending(SS_REC_PHASE, &r, sizeof r, NULL, 0);
#undef r
    }
    SS_GUARD_END(saved);
}

/* ---- snapshots without code changes ---- */

static void ss_on_snapshot_signal(int sig) {
    (void)sig;
    ss_snapshot_requested = 1; /* taken by the flusher thread within its next tick */
}

void ss_phases_start(void) {
    if (ss_config.snapshot_signal) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = ss_on_snapshot_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGUSR2, &sa, NULL);
    }
    ss_take_snapshot("start", NULL);
}

void ss_phases_at_exit(void) { ss_take_snapshot("exit", NULL); }

/* The flusher's tick: periodic snapshots and those asked for by signal. */
void ss_phases_tick(uint32_t elapsed_ms) {
    static uint32_t since;
    if (ss_snapshot_requested) {
        ss_snapshot_requested = 0;
        ss_take_snapshot("SIGUSR2", NULL);
    }
    if (ss_config.snapshot_ms == 0) return;
    since += elapsed_ms;
    if (since >= ss_config.snapshot_ms) {
        since = 0;
        ss_take_snapshot("periodic", NULL);
    }
}
