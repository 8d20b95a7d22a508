/* Threads: their nodes (record, lock table and sample rings in one mapping), the reuse of nodes,
 * and the groups that short threads are folded into when they end.
 *
 * Cost and size are bounded by the threads alive, not by every thread ever created
 * (docs/FORMAT.md, "Bounds"):
 * - A node whose thread has ended and whose last state is in the output (written on its own, or
 *   folded) is reset by the flusher and reused by the next pthread_create. The list is as long
 *   as the most threads that existed at once (alive, or ended and not yet written).
 * - A thread that ended before any flush wrote it is written on its own while a budget lasts
 *   (SS_OWN_FIRST threads, then one more per second); beyond it, it is folded: its counters are
 *   added to the group of threads of its name (one FOLDED record per group), and its samples
 *   are written under the group's serial.
 * - The flusher settles ended threads at every tick (and when destructors say many ended), not
 *   only at flushes, so that nodes of short threads are reused within milliseconds.
 *
 * Nodes live in memory the kernel wipes in a fork child (MADV_WIPEONFORK): fork copies none of
 * it, and the child starts with zeroed nodes. */
#include "ss_hooks.h"
#include "ss_raw.h"

#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

SS_FORK_STATE uint32_t ss_ended_pending;
static uint32_t ss_next_serial;
SS_FORK_STATE static uint32_t ss_free_nodes; /* nodes in state FREE */
static pthread_key_t ss_thread_key;
static int ss_key_ok;

/* ---- nodes ---- */

#define SS_NODE_HEAD ((sizeof(struct ss_thread) + 4095u) & ~(size_t)4095u)

static int ss_sampling_buffers(void) { return ss_config.cpu_hz || ss_config.wall_hz; }

size_t ss_node_size(void) {
    return SS_NODE_HEAD + (ss_sampling_buffers() ? (SS_CPU_RING + SS_WALL_RING) * sizeof(struct ss_sample) +
                                                       SS_WAIT_RING * sizeof(struct ss_wait)
                                                 : 0);
}

struct ss_sample *ss_node_rings(struct ss_thread *t) {
    return ss_sampling_buffers() ? (struct ss_sample *)((char *)t + SS_NODE_HEAD) : NULL;
}

/* The node's own part, for a new thread (from ss_thread_reset, below). The record is
 * cleared only in a node that was used: a new mapping's pages stay untouched. */
void ss_threads_thread_reset(struct ss_thread *t) {
    if (t->magic == SS_NODE_MAGIC) memset(&t->rec, 0, sizeof t->rec);
    t->rng = (uint64_t)(uintptr_t)t ^ ss_ticks() ^ 0x9E3779B97F4A7C15ull;
    if (!t->rng) t->rng = 1;
    t->start_fn = NULL;
    t->start_arg = NULL;
    t->cpu_base_ns = 0;
    t->written_signature = 0;
    t->written = 0;
    t->fate = SS_FATE_OPEN;
    t->in_batch = 0;
    t->gone = 0;
    t->covered = 0;
    t->released = 0;
    t->retired_next = NULL;
    t->py_name_len = 0;
}

/* A node for a new thread: a free one from the list, or a new mapping. */
struct ss_thread *ss_thread_alloc(void) {
    if (__atomic_load_n(&ss_free_nodes, __ATOMIC_ACQUIRE) > 0) {
        for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
            uint32_t expected = SS_NODE_FREE;
            if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) == SS_NODE_FREE &&
                __atomic_compare_exchange_n(&t->state, &expected, SS_NODE_CLAIMED, 0, __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                __atomic_fetch_sub(&ss_free_nodes, 1, __ATOMIC_RELAXED);
                return t;
            }
        }
    }
    struct ss_thread *t = ss_map_wiped(ss_node_size());
    if (!t) return NULL;
    t->state = SS_NODE_CLAIMED;
    ss_thread_reset(t);
    return t;
}

/* Gives back a node that was never attached to a thread. */
void ss_thread_free(struct ss_thread *t) {
    if (t->listed) {
        __atomic_store_n(&t->state, SS_NODE_FREE, __ATOMIC_RELEASE);
        __atomic_fetch_add(&ss_free_nodes, 1, __ATOMIC_RELAXED);
    } else {
        ss_unmap(t, ss_node_size());
    }
}

/* Makes `t` the node of the calling thread and publishes it. */
void ss_thread_attach(struct ss_thread *t, int is_main) {
    t->rec.serial = __atomic_fetch_add(&ss_next_serial, 1, __ATOMIC_RELAXED);
    t->rec.tid = (uint32_t)syscall(SYS_gettid);
    t->rec.flags = is_main ? SS_THREAD_MAIN : 0;
    /* A thread's CPU clock started at clone. A thread our pthread_create started (its node has
     * the start routine) counts all of it, and its life starts when that CPU time began at the latest, so that its
     * CPU time never exceeds its life; the main thread (its clock started at exec) and a thread
     * met at its first call start now and count their CPU time from now on. */
    int adopted = is_main || t->start_fn == NULL;
    uint64_t now = ss_mono_ns(), cpu = ss_thread_cpu_ns((pid_t)t->rec.tid);
    t->rec.start_mono_ns = adopted || cpu >= now ? now : now - cpu;
    t->cpu_base_ns = adopted ? cpu : 0;
    t->pthread_id = (uintptr_t)pthread_self();
    /* A node attached while no window is open (a window closed under a pthread_create) is stale
     * from the start: its thread drops it at its next slow part. */
    t->window = ss_paused && !__atomic_load_n(&ss_window_open, __ATOMIC_ACQUIRE) ? SS_WINDOW_NONE
                                                                                 : __atomic_load_n(&ss_window, __ATOMIC_ACQUIRE);
    ss_self = t;
    ss_sampler_thread_start(t);
    if (ss_key_ok) pthread_setspecific(ss_thread_key, t); /* ends the record at thread exit */
    __atomic_store_n(&t->state, SS_NODE_LIVE, __ATOMIC_RELEASE);
    if (t->listed) return;
    t->listed = 1;
    struct ss_thread *head = __atomic_load_n(&ss_threads, __ATOMIC_RELAXED);
    do {
        t->next = head;
    } while (!__atomic_compare_exchange_n(&ss_threads, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

uint64_t ss_thread_cpu_ns(pid_t tid) {
    clockid_t id = ss_thread_clock(tid); /* safe even after the thread is gone */
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether the kernel no longer knows the thread (its CPU clock is invalid once it has exited and
 * been reaped; a thread of another process is refused too). Calls a thread makes after its
 * record ended (later TSD destructors, glibc's own exit path) still land in its node until then. */
static int ss_thread_gone(const struct ss_thread *t) {
    clockid_t id = ss_thread_clock((pid_t)t->rec.tid);
    struct timespec ts;
    return clock_gettime(id, &ts) != 0;
}

/* Ends the calling thread's record (its TSD destructor, or pthread_exit of the main thread). */
void ss_thread_end(struct ss_thread *t) {
    ss_locks_flush_pending(t);
    ss_omp_run_close(t);
    ss_sampler_thread_end(t);
    ss_alloc_thread_end(t);
    char name[16] = {0};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    memcpy(t->rec.name, name, sizeof name);
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    SS_STORE(t->rec.cpu_ns, cpu > t->cpu_base_ns ? cpu - t->cpu_base_ns : 0);
    SS_STORE(t->rec.end_mono_ns, ss_mono_ns());
    __atomic_or_fetch(&t->rec.flags, SS_THREAD_ENDED, __ATOMIC_RELEASE);
    __atomic_store_n(&t->state, SS_NODE_ENDED, __ATOMIC_RELEASE);
    /* Many short threads: let the flusher settle them now rather than at its next tick. */
    if (__atomic_add_fetch(&ss_ended_pending, 1, __ATOMIC_RELAXED) % 64 == 0) ss_wake_flusher();
}

static void ss_thread_destructor(void *arg) {
    struct ss_thread *t = arg;
    if (!t || __atomic_load_n(&ss_sandboxed, __ATOMIC_RELAXED) || ss_pid != getpid() || t->magic != SS_NODE_MAGIC)
        return;
    /* A node of a closed window this thread let go of may be another thread's by now. */
    if (__atomic_load_n(&t->released, __ATOMIC_ACQUIRE) || t->rec.tid != (uint32_t)syscall(SYS_gettid)) return;
    ss_thread_end(t);
}

void ss_threads_init(void) { ss_key_ok = pthread_key_create(&ss_thread_key, ss_thread_destructor) == 0; }

/* ---- ended threads written on their own: the budget ---- */

#define SS_OWN_FIRST 64u        /* short threads written on their own before folding starts */
#define SS_OWN_REFILL_MS 1000u  /* then one more per second */

SS_FORK_STATE static uint64_t ss_own_tokens_ms = SS_OWN_FIRST * SS_OWN_REFILL_MS;
SS_FORK_STATE static uint64_t ss_own_refilled_ns;

static int ss_take_own_token(uint64_t now) {
    if (ss_own_refilled_ns == 0) ss_own_refilled_ns = now;
    uint64_t elapsed_ms = (now - ss_own_refilled_ns) / 1000000ull;
    if (elapsed_ms) {
        ss_own_tokens_ms += elapsed_ms;
        if (ss_own_tokens_ms > SS_OWN_FIRST * SS_OWN_REFILL_MS) ss_own_tokens_ms = SS_OWN_FIRST * SS_OWN_REFILL_MS;
        ss_own_refilled_ns += elapsed_ms * 1000000ull;
    }
    if (ss_own_tokens_ms < SS_OWN_REFILL_MS) return 0;
    ss_own_tokens_ms -= SS_OWN_REFILL_MS;
    return 1;
}

/* ---- groups of folded threads ---- */

#define SS_FOLD_GROUPS 32u /* by name; the last one takes every other name */

struct ss_fold_group {
    uint32_t serial;
    uint32_t changed;
    uint64_t threads;
    uint64_t allocating; /* threads that called the allocator */
    uint64_t life_ns;
    uint64_t frees_checked, frees_cross;
    struct ss_thread_record rec;
    struct ss_lock_stats locks[SS_LOCK_SLOTS + 1];
};

static struct ss_fold_group *ss_groups; /* SS_FOLD_GROUPS of them, mapped at the first fold */
SS_FORK_STATE static uint32_t ss_ngroups;

static struct ss_fold_group *ss_group_for(const char name[16]) {
    for (uint32_t i = 0; i < ss_ngroups; i++)
        if (memcmp(ss_groups[i].rec.name, name, 16) == 0 || (i == SS_FOLD_GROUPS - 1)) return &ss_groups[i];
    if (!ss_groups) ss_groups = ss_map_wiped(SS_FOLD_GROUPS * sizeof *ss_groups);
    if (!ss_groups) return NULL;
    struct ss_fold_group *g = &ss_groups[ss_ngroups++];
    memset(g, 0, sizeof *g); /* a child without wiped memory reuses the parent's */
    g->serial = __atomic_fetch_add(&ss_next_serial, 1, __ATOMIC_RELAXED);
    g->rec.serial = g->serial;
    g->rec.flags = SS_THREAD_ENDED;
    if (ss_ngroups < SS_FOLD_GROUPS) memcpy(g->rec.name, name, 16); /* the last group: other names, "" */
    return g;
}

static void ss_fn_add(struct ss_fn_stats *a, const struct ss_fn_stats *b) {
    a->calls += b->calls;
    a->bytes += b->bytes;
    a->timed_calls += b->timed_calls;
    a->timed_ticks += b->timed_ticks;
    a->exact_calls += b->exact_calls;
    a->exact_ticks += b->exact_ticks;
}

static void ss_lock_add(struct ss_lock_stats *a, const struct ss_lock_stats *b) {
    a->kind = b->kind;
    a->acquisitions += b->acquisitions;
    a->contended += b->contended;
    a->wait_ticks += b->wait_ticks;
    if (b->max_wait_ticks > a->max_wait_ticks) a->max_wait_ticks = b->max_wait_ticks;
    a->timed_holds += b->timed_holds;
    a->hold_ticks += b->hold_ticks;
}

/* The group's slot for a lock (linear probing over the whole table: this is off the hot path). */
static struct ss_lock_stats *ss_group_lock(struct ss_fold_group *g, uint64_t address, uint32_t kind) {
    uint32_t h = (uint32_t)(((address >> 4) * 0x9E3779B97F4A7C15ull) >> 56);
    for (uint32_t i = 0; i < SS_LOCK_SLOTS; i++) {
        struct ss_lock_stats *l = &g->locks[(h + i) & (SS_LOCK_SLOTS - 1)];
        if (l->address == address && l->kind == kind) return l;
        if (l->address == 0) {
            l->address = address;
            l->kind = kind;
            return l;
        }
    }
    g->rec.flags |= SS_THREAD_LOCKS_OVERFLOW;
    return &g->locks[SS_LOCK_OVERFLOW];
}

/* Adds an ended thread's counters and samples to its group. The flusher owns the groups. */
static void ss_fold(struct ss_thread *t) {
    struct ss_thread_record *r = &t->rec;
    struct ss_fold_group *g = ss_group_for(r->name);
    if (!g) return; /* no memory: the thread is lost, the program goes on */
    struct ss_thread_record *a = &g->rec;
    if (g->threads == 0 || r->start_mono_ns < a->start_mono_ns) a->start_mono_ns = r->start_mono_ns;
    if (r->end_mono_ns > a->end_mono_ns) a->end_mono_ns = r->end_mono_ns;
    g->threads++;
    g->life_ns += r->end_mono_ns > r->start_mono_ns ? r->end_mono_ns - r->start_mono_ns : 0;
    a->flags |= r->flags & (SS_THREAD_LOCKS_OVERFLOW | SS_THREAD_SIGNAL_BLOCKED);
    a->cpu_ns += r->cpu_ns;
    a->lock_wait_ticks += r->lock_wait_ticks;
    struct ss_fn_stats fn[SS_FN_COUNT];
    memcpy(fn, r->fn, sizeof fn);
    ss_alloc_small_into(t, fn, a->size_hist);
    int allocated = 0;
    for (int f = 0; f < SS_FN_COUNT; f++) {
        ss_fn_add(&a->fn[f], &fn[f]);
        allocated |= fn[f].calls != 0;
    }
    g->allocating += (uint64_t)allocated;
    for (uint32_t b = 0; b < SS_SIZE_BUCKETS; b++) a->size_hist[b] += r->size_hist[b];
    for (int k = 0; k < SS_GRP_COUNT; k++)
        for (uint32_t b = 0; b < SS_LAT_BUCKETS; b++) a->lat_hist[k][b] += r->lat_hist[k][b];
    /* Each of the thread's locks is one slot of the group's (its table holds each lock once),
     * except the overflow slot, into which several of its locks may go: the thread counts there
     * once (it counted once per lock, and a group of 26 threads said 92 took it). */
    int in_overflow = 0;
    for (uint32_t i = 0; i <= SS_LOCK_SLOTS; i++) {
        const struct ss_lock_stats *l = &t->locks.table[i];
        if (!l->address && !l->kind) continue;
        if (!l->acquisitions && !l->wait_ticks) continue;
        struct ss_lock_stats *into = i == SS_LOCK_OVERFLOW || !l->address ? &g->locks[SS_LOCK_OVERFLOW]
                                                                          : ss_group_lock(g, l->address, l->kind);
        ss_lock_add(into, l);
        if (into == &g->locks[SS_LOCK_OVERFLOW]) {
            if (in_overflow) continue;
            in_overflow = 1;
        }
        if (into->threads < UINT32_MAX) into->threads++;
    }
    g->frees_checked += t->alloc.frees_checked;
    g->frees_cross += t->alloc.frees_cross;
    ss_sampler_drain(t, &ss_fold_out, g->serial);
    g->changed = 1;
}

/* ---- settling ended threads (the flusher, holding the flush lock) ---- */

#define SS_RETIRED_MAX 1024u
static struct ss_cross_frees_entry ss_retired[SS_RETIRED_MAX]; /* ended threads written on their own */
SS_FORK_STATE static uint32_t ss_nretired;

static void ss_node_recycle(struct ss_thread *t) {
    if (t->fate != SS_FATE_FOLD && t->alloc.frees_checked) {
        if (ss_nretired < SS_RETIRED_MAX) {
            ss_retired[ss_nretired++] = (struct ss_cross_frees_entry){t->rec.serial, 0, t->alloc.frees_checked, t->alloc.frees_cross};
        } else { /* beyond the table, merged into its last entry (only their sums are used) */
            ss_retired[SS_RETIRED_MAX - 1].checked += t->alloc.frees_checked;
            ss_retired[SS_RETIRED_MAX - 1].cross += t->alloc.frees_cross;
        }
    }
    ss_thread_reset(t);
    __atomic_store_n(&t->state, SS_NODE_FREE, __ATOMIC_RELEASE);
    __atomic_fetch_add(&ss_free_nodes, 1, __ATOMIC_RELAXED);
}

/* Decides what becomes of an ended node no flush has written, once its thread is gone: written
 * on its own (within the budget), or folded into its group now and reused. Returns 1 if the node
 * was folded. */
static int ss_settle(struct ss_thread *t, uint64_t now) {
    if (t->fate != SS_FATE_OPEN) return 0;
    if (t->written) {
        t->fate = SS_FATE_OWN;
        return 0;
    }
    if (!ss_thread_gone(t)) return 0;
    if (ss_take_own_token(now)) {
        t->fate = SS_FATE_OWN;
        return 0;
    }
    t->fate = SS_FATE_FOLD;
    ss_fold(t);
    ss_node_recycle(t);
    return 1;
}

/* The flusher's tick: fold the short threads that ended since, so their nodes are reused. */
void ss_threads_fold_ended(void) {
    static uint32_t open_nodes; /* ended nodes still undecided at the last look */
    if (__atomic_load_n(&ss_ended_pending, __ATOMIC_RELAXED) == 0 && open_nodes == 0) return;
    if (!ss_flush_try_lock()) return;
    __atomic_store_n(&ss_ended_pending, 0, __ATOMIC_RELAXED);
    uint64_t now = ss_mono_ns();
    open_nodes = 0;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SS_NODE_ENDED) continue;
        ss_settle(t, now);
        if (t->fate == SS_FATE_OPEN) open_nodes++;
    }
    ss_flush_unlock();
}

/* Marks the nodes the flush being assembled writes: threads alive long enough (a young thread
 * that ends before the next flush may still be folded), every thread at the final flush, and
 * ended threads written on their own. */
void ss_threads_prepare_batch(int final) {
    uint64_t now = ss_mono_ns(), young_ns = (uint64_t)ss_config.flush_ms * 1000000ull;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        t->in_batch = 0;
        t->gone = 0;
        uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (state == SS_NODE_LIVE) {
            /* A young thread waits to be folded with other short ones, unless its wait ring fills
             * (a thread that blocks that often is not a trivial one): then it is written now. */
            uint32_t waits = __atomic_load_n(&t->waits.head, __ATOMIC_ACQUIRE) - t->waits.tail;
            t->in_batch = final || t->written || (t->rec.flags & SS_THREAD_MAIN) ||
                          now - t->rec.start_mono_ns >= young_ns || waits >= SS_WAIT_RING_EARLY;
        } else if (state == SS_NODE_ENDED) {
            if (ss_settle(t, now)) continue; /* folded */
            if (t->fate == SS_FATE_OPEN && !final) continue; /* still exiting: decided later */
            t->gone = ss_thread_gone(t);
            t->in_batch = 1;
        }
    }
}

static int ss_out_thread(struct ss_thread *t, int final) {
    static struct ss_thread_record rec;
    static struct ss_lock_stats locks[SS_LOCK_SLOTS + 1];
    /* Copied word by word with relaxed loads: the thread may be updating it. */
    const uint64_t *src = (const uint64_t *)&t->rec;
    uint64_t *dst = (uint64_t *)&rec;
    for (size_t i = 0; i < sizeof rec / 8; i++) dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    ss_alloc_small_into(t, rec.fn, rec.size_hist);
    int ended = (__atomic_load_n(&t->rec.flags, __ATOMIC_ACQUIRE) & SS_THREAD_ENDED) != 0;
    uint64_t sig = rec.flags + rec.lock_wait_ticks;
    for (int i = 0; i < SS_FN_COUNT; i++) sig += rec.fn[i].calls * (uint64_t)(i + 1);
    uint32_t n = 0;
    for (uint32_t i = 0; i <= SS_LOCK_SLOTS; i++) {
        if (__atomic_load_n(&t->locks.table[i].acquisitions, __ATOMIC_RELAXED) == 0 &&
            __atomic_load_n(&t->locks.table[i].wait_ticks, __ATOMIC_RELAXED) == 0)
            continue;
        const uint64_t *ls = (const uint64_t *)&t->locks.table[i];
        uint64_t *ld = (uint64_t *)&locks[n];
        for (size_t k = 0; k < sizeof locks[n] / 8; k++) ld[k] = __atomic_load_n(&ls[k], __ATOMIC_RELAXED);
        sig += locks[n].acquisitions;
        n++;
    }
    /* Running threads are rewritten at every flush (their CPU time moves); ended ones once more. */
    if (ended && t->written && sig == t->written_signature && !final) return 0;
    if (!ended) {
        uint64_t cpu = ss_thread_cpu_ns((pid_t)rec.tid);
        rec.cpu_ns = cpu > t->cpu_base_ns ? cpu - t->cpu_base_ns : 0;
        char path[64], name[32] = {0};
        struct ss_str s = {path, 0, sizeof path};
        ss_str_cat(&s, "/proc/self/task/");
        ss_str_u64(&s, rec.tid);
        ss_str_cat(&s, "/comm");
        size_t len; /* the caller's own name needs no file (a fork child at its exit) */
        if ((pid_t)rec.tid == (pid_t)syscall(SYS_gettid)) {
            prctl(PR_GET_NAME, name, 0, 0, 0);
            len = strlen(name);
        } else {
            len = ss_read_file(path, name, sizeof name - 1);
        }
        while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == 0)) len--;
        if (len > 0) {
            memset(rec.name, 0, sizeof rec.name);
            memcpy(rec.name, name, len < 15 ? len : 15);
        }
    }
    rec.nlocks = n;
    if (ss_out_record(SS_REC_THREAD, &rec, sizeof rec, locks, n * sizeof(struct ss_lock_stats)) != 0) return -1;
    if (ss_py_write_thread(t, rec.serial, rec.tid) != 0) return -1;
    t->written = 1;
    t->written_signature = sig;
    return 0;
}

static int ss_out_group(struct ss_fold_group *g) {
    static struct ss_lock_stats locks[SS_LOCK_SLOTS + 1];
    uint32_t n = 0;
    for (uint32_t i = 0; i <= SS_LOCK_SLOTS; i++)
        if (g->locks[i].acquisitions || g->locks[i].wait_ticks) locks[n++] = g->locks[i];
    g->rec.nlocks = n;
    struct ss_folded_record f = {(uint32_t)(g->threads > UINT32_MAX ? UINT32_MAX : g->threads),
                                 (uint32_t)(g->allocating > UINT32_MAX ? UINT32_MAX : g->allocating), g->life_ns};
    if (ss_out_record3(SS_REC_FOLDED, &f, sizeof f, &g->rec, sizeof g->rec, locks, n * sizeof *locks) != 0) return -1;
    g->changed = 0;
    return 0;
}

/* THREAD records of the batch's nodes, and FOLDED records of the groups that changed. */
int ss_threads_write(int final) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        if (t->in_batch && ss_out_thread(t, final) != 0) return -1;
    for (uint32_t i = 0; i < ss_ngroups; i++)
        if ((ss_groups[i].changed || final) && ss_out_group(&ss_groups[i]) != 0) return -1;
    return 0;
}

/* After the batch: nodes whose thread is gone and whose last state was written are reused (when
 * `recycle`: not after an early flush, writer.c). */
void ss_threads_after_batch(int recycle) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (recycle && t->in_batch && t->gone && __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == SS_NODE_ENDED)
            ss_node_recycle(t);
        t->in_batch = 0;
    }
}

/* Cross-thread frees of the threads in this batch, of ended ones, and of the groups. */
uint32_t ss_threads_cross_frees(struct ss_cross_frees_entry *buf, uint32_t cap) {
    uint32_t n = 0;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t && n < cap; t = t->next) {
        uint64_t checked = SS_LOAD(t->alloc.frees_checked);
        if (t->in_batch && checked) buf[n++] = (struct ss_cross_frees_entry){t->rec.serial, 0, checked, SS_LOAD(t->alloc.frees_cross)};
    }
    for (uint32_t i = 0; i < ss_nretired && n < cap; i++) buf[n++] = ss_retired[i];
    for (uint32_t i = 0; i < ss_ngroups && n < cap; i++)
        if (ss_groups[i].frees_checked)
            buf[n++] = (struct ss_cross_frees_entry){ss_groups[i].serial, 0, ss_groups[i].frees_checked,
                                                     ss_groups[i].frees_cross};
    return n;
}

/* ---- nodes of closed windows (attach.c): retired, then reused ---- */

/* The nodes of the windows before the current one that some thread may still write: a thread
 * keeps its node of a closed window until its next slow part (ss_known), and a call it began
 * then finishes in it. Only the flusher reads or changes this list (holding the flush lock). */
SS_FORK_STATE static struct ss_thread *ss_retired_nodes;

/* Whether nothing writes a retired node any more: free already; made for a thread the window
 * found running that never adopted it (its timer was deleted when the window closed; the claim
 * here keeps any thread from adopting it now); let go of by its thread; or its thread is gone.
 * A node claimed for a thread being created is not: that thread attaches it yet. */
static int ss_node_unused(struct ss_thread *t) {
    uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
    if (state == SS_NODE_FREE) return 1;
    if (state == SS_NODE_CLAIMED) return 0;
    uint32_t one = 1;
    if (__atomic_load_n(&t->covered, __ATOMIC_ACQUIRE) &&
        __atomic_compare_exchange_n(&t->covered, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 1;
    if (__atomic_load_n(&t->released, __ATOMIC_ACQUIRE)) return 1;
    return t->rec.tid != 0 && ss_thread_gone(t);
}

/* Retired nodes nothing writes any more go back on the list, free for the next thread: the
 * memory of a process recorded in windows is that of the most threads it had at once (each
 * holds at most one node of a closed window and one of the open one), however many windows. */
static void ss_threads_reclaim(void) {
    struct ss_thread **link = &ss_retired_nodes;
    while (*link) {
        struct ss_thread *t = *link;
        if (!ss_node_unused(t)) {
            link = &t->retired_next;
            continue;
        }
        *link = t->retired_next;
        ss_thread_reset(t);
        /* Off every list while it is reset: nobody claims it (only FREE nodes are claimed). */
        __atomic_store_n(&t->state, SS_NODE_FREE, __ATOMIC_RELEASE);
        t->listed = 1;
        struct ss_thread *head = __atomic_load_n(&ss_threads, __ATOMIC_RELAXED);
        do {
            t->next = head;
        } while (!__atomic_compare_exchange_n(&ss_threads, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
        __atomic_fetch_add(&ss_free_nodes, 1, __ATOMIC_RELAXED);
    }
}

/* In a fork child: the list starts empty (the child has one thread, attached again lazily). */
SS_FORK_TEXT void ss_threads_after_fork_child(void) {
    ss_retired_nodes = NULL;
    ss_threads = NULL;
    ss_free_nodes = 0;
    ss_ended_pending = 0;
    ss_ngroups = 0;
    ss_nretired = 0;
    ss_own_tokens_ms = SS_OWN_FIRST * SS_OWN_REFILL_MS;
    ss_own_refilled_ns = 0;
}

/* This module's steps, walked by the lifecycle (lifecycle.c). */
const struct ss_steps ss_threads_steps = {.name = "threads", .on_fork_child = ss_threads_after_fork_child};

/* The node of the thread that forked, in the child: wiped by the kernel (re-initialised, with
 * whatever the child recorded since), or a copy of the parent's (cleared). */
void ss_thread_child_node(struct ss_thread *t) {
    ss_thread_reset(t);
    t->listed = 0;
    t->state = SS_NODE_CLAIMED;
}

/* A fork child's one thread, attached at its first call or its end: its life and its CPU clock
 * began at the fork (`forked`), not when we first met it (a worker that computes before its
 * first call we interpose would otherwise show neither its life nor its CPU time). */
void ss_thread_began_at_fork(struct ss_thread *t, uint64_t forked) {
    if (forked && forked <= t->rec.start_mono_ns) t->rec.start_mono_ns = forked;
    t->cpu_base_ns = 0;
}

/* The THREAD record of a fork child's one thread that made no call we interpose, at its end:
 * what ss_thread_attach and ss_out_thread write for it (its life and CPU time from the fork, its
 * name, nothing recorded), without its node, whose pages the child would have to get. */
SS_FORK_TEXT void ss_thread_bare_record(struct ss_thread_record *rec, uint64_t forked, uint64_t now) {
    ss_raw_zero(rec, sizeof *rec); /* no libc call here: ss_raw.h */
    rec->serial = __atomic_load_n(&ss_next_serial, __ATOMIC_RELAXED);
    rec->tid = (uint32_t)SS_RAW(SYS_gettid, 0, 0, 0);
    rec->flags = SS_THREAD_MAIN;
    rec->start_mono_ns = forked && forked <= now ? forked : now;
    uint64_t cpu = ss_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    rec->cpu_ns = cpu <= now - rec->start_mono_ns ? cpu : now - rec->start_mono_ns;
    char name[32];
    ss_raw_zero(name, sizeof name);
    SS_RAW(SYS_prctl, PR_GET_NAME, name, 0);
    size_t len = ss_raw_strlen(name);
    ss_raw_copy(rec->name, name, len < 15 ? len : 15);
}

/* A new window (attach.c): the list starts empty, as in a fork child, and the nodes of the last
 * one are retired, never written again (their threads drop them at their next slow part; a
 * thread blocked in a call it began then finishes it in the old node); those nothing writes any
 * more are reused (ss_threads_reclaim). */
void ss_threads_window_reset(void) {
    struct ss_thread *retired = ss_retired_nodes, *next;
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = next) {
        next = t->next;
        t->retired_next = retired;
        retired = t;
    }
    ss_threads_after_fork_child();
    ss_retired_nodes = retired;
    ss_next_serial = 0;
    ss_threads_reclaim();
}

/* ---- threads that existed when a window opened (attach.c) ---- */

static void ss_list_push(struct ss_thread *t) {
    if (t->listed) return;
    t->listed = 1;
    struct ss_thread *head = __atomic_load_n(&ss_threads, __ATOMIC_RELAXED);
    do {
        t->next = head;
    } while (!__atomic_compare_exchange_n(&ss_threads, &head, t, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static int ss_tid_has_node(uint32_t tid) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if (t->rec.tid == tid && (state == SS_NODE_LIVE || state == SS_NODE_CLAIMED)) return 1;
    }
    return 0;
}

/* The flusher, as a window opens: a node and a CPU timer for every thread of the process (but
 * itself) that has none, so that a thread which makes no hooked call in the window (a loop that
 * only computes) is sampled too. Its samples have their pc, not their stack, until the thread
 * adopts the node at its first hooked call (ss_thread_adopt_covered). */
/* One entry of /proc/self/task: a thread without a node gets one, covered by the sampler. */
static int ss_cover_thread(uint64_t n, void *ctx) {
    uint32_t self = *(const uint32_t *)ctx;
    uint32_t tid = n == UINT64_MAX ? 0 : (uint32_t)n;
    if (tid == 0 || tid == self || ss_tid_has_node(tid)) return 1;
    struct ss_thread *t = ss_thread_alloc();
    if (!t) return 0;
    t->rec.serial = __atomic_fetch_add(&ss_next_serial, 1, __ATOMIC_RELAXED);
    t->rec.tid = tid;
    t->rec.flags = (pid_t)tid == ss_pid ? SS_THREAD_MAIN : 0;
    uint64_t now = ss_mono_ns();
    t->rec.start_mono_ns = now;
    t->cpu_base_ns = ss_thread_cpu_ns((pid_t)tid);
    t->pthread_id = 0;
    t->window = __atomic_load_n(&ss_window, __ATOMIC_ACQUIRE);
    __atomic_store_n(&t->covered, 1, __ATOMIC_RELEASE);
    ss_sampler_cover(t);
    __atomic_store_n(&t->state, SS_NODE_LIVE, __ATOMIC_RELEASE);
    ss_list_push(t);
    return 1;
}

void ss_threads_cover_existing(void) {
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    ss_each_dir_number(dir, ss_cover_thread, &self);
    close(dir);
}

/* The calling thread's node made by the flusher, if there is one: now its own. */
struct ss_thread *ss_thread_adopt_covered(void) {
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        uint32_t one = 1;
        if (t->rec.tid != tid || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SS_NODE_LIVE || ss_stale(t) ||
            !__atomic_compare_exchange_n(&t->covered, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        t->pthread_id = (uintptr_t)pthread_self();
        ss_self = t;
        ss_me = t;
        if (ss_key_ok) pthread_setspecific(ss_thread_key, t); /* ends the record at thread exit */
        return t;
    }
    return NULL;
}

/* The flusher's tick: a covered thread that ended without a hooked call ends its record, with
 * the CPU time it had at the last look (its clock is gone with it). */
void ss_threads_covered_tick(void) {
    uint64_t now = ss_mono_ns();
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        if (!__atomic_load_n(&t->covered, __ATOMIC_ACQUIRE) || __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != SS_NODE_LIVE)
            continue;
        uint64_t cpu = ss_thread_cpu_ns((pid_t)t->rec.tid);
        if (cpu) {
            SS_STORE(t->rec.cpu_ns, cpu > t->cpu_base_ns ? cpu - t->cpu_base_ns : 0);
            continue;
        }
        uint32_t one = 1;
        if (!__atomic_compare_exchange_n(&t->covered, &one, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) continue;
        ss_sampler_thread_end(t);
        SS_STORE(t->rec.end_mono_ns, now);
        __atomic_or_fetch(&t->rec.flags, SS_THREAD_ENDED, __ATOMIC_RELEASE);
        __atomic_store_n(&t->state, SS_NODE_ENDED, __ATOMIC_RELEASE);
        __atomic_add_fetch(&ss_ended_pending, 1, __ATOMIC_RELAXED);
    }
}

/* Every part of a node brought to a new thread's start: a new mapping (all zeros), a node whose
 * thread ended and whose state is written (reused), a fork child's (wiped or copied). Each
 * module resets its own part; the node's own part comes first (its random state draws the
 * others' countdowns). */
void ss_thread_reset(struct ss_thread *t) {
    ss_threads_thread_reset(t);
    ss_alloc_thread_reset(t);
    ss_stacks_thread_reset(t);
    ss_locks_thread_reset(t);
    ss_phases_thread_reset(t);
    ss_omp_thread_reset(t);
    ss_itt_thread_reset(t);
    ss_sampler_thread_reset(t);
    ss_waitfor_thread_reset(t);
    t->magic = SS_NODE_MAGIC;
}
