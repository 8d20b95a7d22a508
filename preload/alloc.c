/* Allocator hooks: every call is counted with its requested bytes and size bucket; a random
 * 1-in-N sample (every call in exact mode) is also timed, because reading the clock around each
 * call would cost more than the fast path of malloc itself. A malloc below ss_fast_bytes and a
 * free each make one memory decrement: the countdown of the request's size (of free's calls),
 * whose slot also tells the calls so far (struct ss_alloc_small). Other calls are counted with
 * their bytes and size bucket, and timed when their count reaches alloc.timed_at. */
#include "ss_hooks.h"

#include <errno.h>
#include <string.h>

/* ---- bootstrap pool: serves allocations made by dlsym while the real functions are unknown ---- */

#define SS_BOOTSTRAP_SIZE (256u * 1024u)
static _Alignas(16) unsigned char ss_bootstrap[SS_BOOTSTRAP_SIZE];
static size_t ss_bootstrap_used;

void *ss_bootstrap_alloc(size_t size) {
    size_t need = 16 + ((size + 15) & ~(size_t)15);
    size_t at = __atomic_fetch_add(&ss_bootstrap_used, need, __ATOMIC_RELAXED);
    if (at + need > SS_BOOTSTRAP_SIZE) return NULL;
    unsigned char *p = ss_bootstrap + at;
    size_t huge = ~(size_t)0;
    memcpy(p, &size, sizeof size); /* the block's size, for realloc and malloc_usable_size */
    memcpy(p + 8, &huge, sizeof huge); /* where glibc keeps a chunk's size: sends free's fast part to
                                          its slow part, which knows the pool */
    return p + 16;                 /* fresh static memory is already zero, as calloc needs */
}

int ss_is_bootstrap(const void *p) {
    return (const unsigned char *)p >= ss_bootstrap && (const unsigned char *)p < ss_bootstrap + SS_BOOTSTRAP_SIZE;
}

static size_t ss_bootstrap_size(const void *p) {
    size_t size;
    memcpy(&size, (const unsigned char *)p - 16, sizeof size);
    return size;
}

/* The allocation part of a node, for a new thread (ss_thread_reset, threads.c). Whether frees
 * may take their fast part is decided before the first node is made (ss_guard_calls). */
void ss_alloc_thread_reset(struct ss_thread *t) {
    for (int f = 0; f < SS_FN_COUNT; f++) {
        t->alloc.weight[f] = 1;
        t->alloc.timed_left[f] = ss_config.timed_before_longer;
        t->alloc.timed_at[f] = t->rec.fn[f].calls + ss_next_interval_of(t, ss_config.period);
    }
    t->alloc.free_fast_below = ss_guard_calls ? 0 : UINTPTR_MAX;
    t->alloc.small_below = ss_fast_bytes;
    if (t->magic == SS_NODE_MAGIC) { /* a used node: its sizes' slots are cleared, the others are */
        struct ss_alloc_small *s = &t->small;
        for (uint32_t w = 0; w < sizeof s->used / sizeof s->used[0]; w++)
            for (uint64_t bits = s->used[w]; bits; bits &= bits - 1) {
                uint32_t n = w * 64 + (uint32_t)__builtin_ctzll(bits);
                s->slot[n].word = 0;
                s->base[n] = 0;
            }
        memset(s->used, 0, sizeof s->used);
    }
    t->alloc.frees_checked = t->alloc.frees_cross = 0;
    t->alloc.own_arena = 0;
    t->alloc.free_mark = 0;
}

/* ---- accounting ---- */

static inline size_t ss_size_bucket(size_t n) {
    /* (n - 1) / 8, and 0 for 0, without a branch: the hot path of every allocation. */
    if (SS_LIKELY(n <= 256)) return (n - (n != 0)) >> 3;
    return SS_SIZE_FINE_BUCKETS + (size_t)(64 - __builtin_clzll((unsigned long long)(n - 1))) - 9;
}

static inline uint32_t ss_latency_bucket(uint64_t ns) {
    uint32_t b = (uint32_t)(63 - __builtin_clzll(ns | 1));
    return b < SS_LAT_BUCKETS ? b : SS_LAT_BUCKETS - 1;
}

static void ss_timing_longer(struct ss_thread *t, enum ss_fn fn);

/* Records a measured call: one always timed (it stands for itself in the histogram) or one of the
 * random sample (it stands for the function's period of calls, `weight` configured periods). */
static inline void ss_timed(struct ss_thread *t, enum ss_fn fn, enum ss_group grp, uint64_t ticks, int exact) {
    struct ss_fn_stats *f = &t->rec.fn[fn];
    if (exact) {
        SS_ADD(f->exact_calls, 1);
        SS_ADD(f->exact_ticks, ticks);
        SS_ADD(t->rec.lat_hist[grp][ss_latency_bucket(ss_ticks_to_ns(ticks))], 1);
        return;
    }
    uint32_t w = ss_fn_weight(t, fn);
    SS_ADD(f->timed_calls, w);
    SS_ADD(f->timed_ticks, ticks * w);
    SS_ADD(t->rec.lat_hist[grp][ss_latency_bucket(ss_ticks_to_ns(ticks))], ss_fn_period(t, fn));
    if (SS_UNLIKELY(t->alloc.timed_left[fn] != 0) && --t->alloc.timed_left[fn] == 0) ss_timing_longer(t, fn);
}

/* Strata. A 1-in-N sample would miss the rare call that costs more than all the others together,
 * so calls that may be that call are always timed. In glibc's allocator that is a large-bin
 * request (a chunk of 1024 bytes or more that the thread cache does not serve), which first
 * consolidates the fast bins: with millions of free chunks in them, tens of milliseconds in one
 * call; or a free that merges into 64 KiB or more, which does the same and may give memory back
 * to the system. The fast bins fill up with frees, so a large call can only be that slow after
 * many frees; a large-bin request empties them. A call of SS_LARGE_BYTES or more is therefore
 * always timed
 *   - when it is of SS_ALWAYS_BYTES or more (or frees a mapped chunk), or
 *   - when the thread has freed SS_FREES_BETWEEN_LARGE blocks or more since its last large-bin
 *     request (so its own frees can have filled the fast bins), or
 *   - when it frees a chunk that merges into the top of the heap or another chunk of 64 KiB or
 *     more (ss_free_always_timed);
 * and otherwise joins the 1-in-N sample with the small calls. Which stratum a call falls in depends
 * only on what came before it, so the estimates stay unbiased either way; what this trades is the
 * variance for a program whose fast bins another thread filled (docs/PERFORMANCE.md). With
 * another allocator (guarded calls), every call of SS_LARGE_BYTES or more is always timed. */
#define SS_LARGE_BYTES SS_STACK_BYTES_FROM /* the fast part's requests are those left out of the byte sample */
_Static_assert(SS_LARGE_BYTES % 8 == 0, "free's fast part compares a chunk's size word with it unmasked");
#define SS_ALWAYS_BYTES (64u * 1024u)
#define SS_FREES_BETWEEN_LARGE 64u
/* malloc and calloc requests this large never come from glibc's thread cache (at most 1032 bytes):
 * they take the large-bin path, which consolidates the fast bins. */
#define SS_LARGE_BIN_BYTES 1033u

/* The calls a slot has counted since its `base` (none before its first call). A countdown that
 * borrowed (its slow part under way) reads as next_at: the call is counted. */
static inline uint32_t ss_slot_calls(union ss_small_slot slot) {
    return slot.part.next_at ? slot.part.next_at - 1 - slot.part.left : 0;
}

/* The thread's frees so far, modulo 2^32 and with those of the bootstrap pool, as the thread itself
 * reads them: what the strata below count frees since a mark with (a position moved into `base`
 * once in 2^32 frees at most takes one call into the always-timed stratum). */
static inline uint32_t ss_free_position(const struct ss_thread *t) { return ss_slot_calls(t->small.slot[SS_FREE_SLOT]); }

/* Whether an allocation call of `bytes` (at least SS_LARGE_BYTES, glibc's allocator) is always
 * timed; notes a large-bin request. */
static inline int ss_always_timed(struct ss_thread *t, enum ss_fn fn, size_t bytes) {
    uint32_t frees = ss_free_position(t);
    int exact = bytes >= SS_ALWAYS_BYTES || frees - t->alloc.free_mark >= SS_FREES_BETWEEN_LARGE;
    if ((fn == SS_FN_MALLOC || fn == SS_FN_CALLOC) && bytes >= SS_LARGE_BIN_BYTES) t->alloc.free_mark = frees;
    return exact;
}

/* Whether a free of a chunk whose size word is `header` (at least SS_LARGE_BYTES; glibc's
 * allocator) is always timed: a mapped chunk is unmapped, and a chunk followed by a chunk of
 * SS_CONSOLIDATE_BYTES or more (the top of the heap, or a large free chunk) merges into it, which
 * makes glibc consolidate the fast bins and perhaps give memory back to the system. (A merge with
 * smaller free neighbours into as much does the same, but is slow only with many chunks in the
 * fast bins, which the count of frees covers.) Only a chunk below SS_ALWAYS_BYTES gets this far,
 * so the next chunk's size word is less than 64 KiB away. */
#define SS_CONSOLIDATE_BYTES (64u * 1024u) /* glibc's FASTBIN_CONSOLIDATION_THRESHOLD */
static inline int ss_free_always_timed(struct ss_thread *t, const void *ptr, size_t header) {
    size_t chunk = header & ~(size_t)7;
    if (chunk >= SS_ALWAYS_BYTES || (header & SS_CHUNK_MMAPPED) ||
        ss_free_position(t) - t->alloc.free_mark >= SS_FREES_BETWEEN_LARGE)
        return 1;
    size_t next = ((const size_t *)((const char *)ptr + chunk))[-1] & ~(size_t)7;
    return next >= SS_CONSOLIDATE_BYTES;
}

/* A sampled call stands for `period` calls, so one that was descheduled for milliseconds would
 * count as many times over. Its duration is capped: a call of the sampled stratum that takes
 * longer than this was almost certainly preempted (the calls that may really be that slow are in
 * the always-timed stratum, which is never capped). With every call timed (`--timing exact`) a
 * call stands for itself and nothing is capped. */
static inline uint64_t ss_sampled_ticks(uint64_t ticks, int exact) {
    return !exact && ss_config.period > 1 && ticks > ss_sample_cap_ticks ? ss_sample_cap_ticks : ticks;
}

/* The size bucket of a request below SS_LARGE_BYTES, by its size in 8-byte units rounded up: a
 * table look-up instead of ss_size_bucket's compare and arithmetic (every bucket boundary is a
 * multiple of 8). Filled by ss_alloc_init, before any fast part uses it. */
static uint8_t ss_small_bucket[(SS_LARGE_BYTES + 7) / 8 + 1];
static inline size_t ss_small_size_bucket(size_t n) { return ss_small_bucket[(n + 7) >> 3]; }


void ss_alloc_init(void) {
    for (size_t i = 0; i < sizeof ss_small_bucket; i++) ss_small_bucket[i] = (uint8_t)ss_size_bucket(i * 8);
    ss_fast_bytes = ss_guard_calls ? 0 : SS_LARGE_BYTES;
}

static inline size_t ss_mul_saturating(size_t a, size_t b) {
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? (size_t)-1 : r;
}

/* Every hook has two parts. The fast part, inline in the exported function, counts the call and,
 * when it is neither timed nor sampled for a stack nor in the always-timed stratum, leaves by a
 * tail call to the real function. Everything else is in a slow part of its own (ss_slow_*, never
 * inlined), so that the fast part needs no stack frame: with both in one function the compiler
 * saved and restored six registers on every call for the sake of the slow path. */

/* Counts a call of fn; whether it is the one to time (its count reached timed_at: always in
 * SS_NO_THREAD). Unsigned >=, not ==: a count that skipped past it (a call counted elsewhere)
 * still fires. */
static inline int ss_count_call(struct ss_thread *t, enum ss_fn fn) {
    uint64_t n = SS_LOAD(t->rec.fn[fn].calls) + 1;
    SS_STORE(t->rec.fn[fn].calls, n);
    return n >= t->alloc.timed_at[fn];
}

/* The requested bytes and size bucket of an allocating call. */
static inline void ss_count_size(struct ss_thread *t, enum ss_fn fn, size_t bytes) {
    if (fn != SS_FN_FREE) {
        SS_INC(t->rec.fn[fn].bytes, bytes);
        SS_INC(t->rec.size_hist[ss_size_bucket(bytes)], 1);
    }
}

/* A call counted without a route (reallocarray's overflow: never timed). */
static inline void ss_count(struct ss_thread *t, enum ss_fn fn, size_t bytes) {
    (void)ss_count_call(t, fn);
    ss_count_size(t, fn, bytes);
}

/* In the slow part: whether this call is the timed one, drawing the next if so. */
static inline int ss_take_timed_call(struct ss_thread *t, enum ss_fn fn) {
    uint64_t n = t->rec.fn[fn].calls;
    if (n < t->alloc.timed_at[fn]) return 0;
    t->alloc.timed_at[fn] = n + ss_next_interval_of(t, ss_fn_period(t, fn));
    return 1;
}

/* The fast part of an allocation hook counts the call and decides its route: forwarded as is, or
 * to the slow part (the call is the timed one, its bytes fired a stack, or it is guarded),
 * perhaps as always timed. A request below ss_fast_bytes (the fast part proper) is not in the
 * byte-sampled stacks: it is sampled for its stack by count only (stacks.c), which saves a memory
 * subtraction on every call; a stack per 512 KiB matters for the large requests. */
#define SS_ROUTE_SLOW 1
#define SS_ROUTE_EXACT 2
static inline int ss_alloc_route(struct ss_thread *t, enum ss_fn fn, size_t bytes) {
    if (SS_LIKELY(bytes < ss_fast_bytes)) {
        int timed = ss_count_call(t, fn);
        SS_INC(t->rec.fn[fn].bytes, bytes);
        SS_INC(t->rec.size_hist[ss_small_size_bucket(bytes)], 1);
        return SS_UNLIKELY(timed) ? SS_ROUTE_SLOW : 0;
    }
    int timed = ss_count_call(t, fn);
    ss_count_size(t, fn, bytes);
    /* Each byte countdown is decremented in memory and tested by the flags of that one
     * instruction (a load, a subtraction, a store and a test otherwise). */
    int bytes_fired = ss_sub_is_negative(&t->stacks.bytes_left, bytes);
    if (SS_UNLIKELY(ss_guard_calls)) return SS_ROUTE_SLOW | (bytes >= SS_LARGE_BYTES ? SS_ROUTE_EXACT : 0);
    int route = ss_always_timed(t, fn, bytes) ? SS_ROUTE_SLOW | SS_ROUTE_EXACT : 0;
    return (timed | bytes_fired) ? route | SS_ROUTE_SLOW : route;
}

/* The slow part of an allocation hook whose call the fast part counted and routed: a timed call
 * reads the clock around the real function, a sampled one takes its stack, a guarded one (an
 * allocator other than glibc's) runs the real function with the hooks off. `ret` receives the
 * result. */
#define SS_ALLOC_SLOW(t, fn, grp, bytes, route, ret, real_call)                                              \
    do {                                                                                                    \
        int stimed_ = ss_take_timed_call(t, fn);                                                            \
        SS_ALLOC_MEASURED(t, fn, grp, bytes, stimed_, t->stacks.bytes_left < 0, ((route) & SS_ROUTE_EXACT) != 0, \
                          ret, real_call);                                                                  \
    } while (0)

/* The part of a slow part after the decision: the real call, its duration when it is `timed` (a
 * call of the sample), `exact` (always timed) or its bytes fired a stack, and then its stack if
 * one is due. The stack is taken after the call: the unwinder's tables and the site table it reads
 * evict the allocator's own lines, and a call measured right after a stack would run slower for
 * it (at the longer period of struct ss_alloc_thread, 4.4% of bignum_pell's mallocs read 128 ns
 * to 1 us instead of 0.6%; docs/PERFORMANCE.md, "Timed calls: the clock"). */
#define SS_ALLOC_MEASURED(t, fn, grp, bytes, timed, bytes_fired, exact, ret, real_call)                       \
    do {                                                                                                    \
        size_t bytes_ = (bytes);                                                                            \
        int timed_ = (timed);                                                                               \
        int exact_ = (exact);                                                                               \
        int fired_ = (bytes_fired);                                                                         \
        if (SS_UNLIKELY(ss_child_flusher_due)) ss_child_flusher_check();                                    \
        int measured_ = timed_ | exact_ | fired_;                                                           \
        uint64_t start_ = measured_ ? ss_ticks() : 0;                                                       \
        if (ss_guard_calls) {                                                                               \
            SS_GUARD_BEGIN(saved_);                                                                         \
            ret = real_call;                                                                                \
            SS_GUARD_END(saved_);                                                                           \
        } else {                                                                                            \
            ret = real_call;                                                                                \
        }                                                                                                   \
        if (measured_) {                                                                                    \
            uint64_t ticks_ = ss_sampled_ticks(ss_ticks() - start_, exact_);                                \
            /* the stack first: its weight is that of the period this call was sampled at */              \
            uint32_t site_ = ss_stack_sample_if(t, fn, bytes_, timed_, fired_);                             \
            if (site_) ss_stack_time(t, site_, ticks_);                                                     \
            if (timed_ | exact_) ss_timed(t, fn, grp, ticks_, exact_);                                      \
        }                                                                                                   \
    } while (0)

/* The start of every slow part: a thread not known yet (`t` SS_NO_THREAD) gets its record here, and its
 * call is counted and routed as the fast part would have; `unready` is returned while there is no
 * record to count into (the interposer's own calls, start-up). */
#define SS_SLOW_ENTER(t, fn, bytes, route, unready, real_call)                                               \
    do {                                                                                                    \
        t = ss_known(t);                                                                                    \
        if (!t) {                                                                                           \
            t = ss_enter_slow();                                                                            \
            if (!t) return unready;                                                                         \
            route = ss_alloc_route(t, fn, bytes);                                                           \
            if (!route) return real_call;                                                                   \
        }                                                                                                   \
    } while (0)

/* The exported function of an allocation hook: the fast part, then the slow part. */
#define SS_ALLOC_ENTRY(t, fn, bytes, real_call, slow_call)                                                   \
    do {                                                                                                    \
        struct ss_thread *t = ss_self;                                                                      \
        int route_ = 0;                                                                                     \
        /* t may be SS_NO_THREAD, whose next timed counts (0) route every call to the slow part */        \
        if (SS_LIKELY((route_ = ss_alloc_route(t, fn, bytes)) == 0)) return real_call;                      \
        return slow_call;                                                                                   \
    } while (0)

/* ---- cross-thread frees (glibc's allocator only) ----
 * A chunk's header says which arena holds it: the main arena, or (NON_MAIN_ARENA bit) the arena
 * whose heap_info starts at the chunk's address rounded down to HEAP_MAX_SIZE (64 MiB on 64-bit).
 * glibc gives threads their own arenas (up to 8 per core) and hands the arena of an ended thread
 * to the next new one. A sampled free is checked against the freeing thread's own arena (the
 * arena of its last sampled allocation): a chunk of another arena was allocated by another
 * thread. A thread that has not been seen allocating (a consumer that only frees, a short thread
 * none of whose few allocations was sampled) is checked against the live thread that last
 * allocated from the chunk's arena: a thread gives its arena up when it ends, so an arena
 * inherited from an ended thread is not taken for another thread's (its frees are then not
 * checked). Threads that share an arena are told apart only as far as the last allocator is. */
#define SS_HEAP_MAX_SIZE (64ul * 1024 * 1024)
#define SS_MAIN_ARENA ((uintptr_t)1)
#define SS_ARENA_SLOTS 256u

static struct {
    uintptr_t arena; /* 0: free; claimed with a CAS */
    uint32_t serial;  /* the live thread that last allocated from it (sampled), + 1; 0: none */
} ss_arena_owner[SS_ARENA_SLOTS];

static inline uintptr_t ss_arena_of(const void *p) {
    size_t size = ((const size_t *)p)[-1];
    if (size & SS_CHUNK_MMAPPED) return 0;
    if (!(size & SS_CHUNK_NON_MAIN_ARENA)) return SS_MAIN_ARENA;
    if (ss_arena_reads_off) return 0; /* its heap_info may not be at the 64 MiB boundary */
    return *(const uintptr_t *)((uintptr_t)p & ~(SS_HEAP_MAX_SIZE - 1));
}

/* The slot of an arena (claimed if `claim`), or NULL. */
static uint32_t *ss_arena_slot(uintptr_t arena, int claim) {
    uint32_t h = (uint32_t)((arena >> 12) * 0x9E3779B1u);
    for (uint32_t i = 0; i < SS_ARENA_SLOTS; i++) {
        uint32_t s = (h + i) % SS_ARENA_SLOTS;
        uintptr_t cur = __atomic_load_n(&ss_arena_owner[s].arena, __ATOMIC_ACQUIRE);
        if (cur == arena) return &ss_arena_owner[s].serial;
        if (cur == 0) {
            if (!claim) return NULL;
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&ss_arena_owner[s].arena, &expected, arena, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE) ||
                expected == arena)
                return &ss_arena_owner[s].serial;
        }
    }
    return NULL;
}

/* Clears an arena's last allocator if it is still `t` (a later allocator keeps it). */
static void ss_arena_release(struct ss_thread *t, uintptr_t arena) {
    uint32_t *owner = arena ? ss_arena_slot(arena, 0) : NULL;
    uint32_t mine = t->rec.serial + 1;
    if (owner) __atomic_compare_exchange_n(owner, &mine, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Called on sampled allocations only (after the fast path has returned). Serials count from 0,
 * so the slot stores serial + 1 (0: not yet known). */
static inline void ss_note_arena(struct ss_thread *t, const void *p) {
    if (!p || ss_guard_calls || ss_is_bootstrap(p)) return;
    uintptr_t a = ss_arena_of(p);
    if (!a) return;
    if (t->alloc.own_arena != a) {
        ss_arena_release(t, t->alloc.own_arena); /* the thread moved to another arena */
        t->alloc.own_arena = a;
    }
    uint32_t *owner = ss_arena_slot(a, 1);
    if (owner && SS_LOAD(*owner) != t->rec.serial + 1) SS_STORE(*owner, t->rec.serial + 1);
}

void ss_alloc_thread_end(struct ss_thread *t) { ss_arena_release(t, t->alloc.own_arena); }

static inline void ss_check_free(struct ss_thread *t, const void *p) {
    if (!p || ss_guard_calls || ss_is_bootstrap(p)) return;
    uintptr_t a = ss_arena_of(p);
    if (!a) return;
    uint32_t w = ss_fn_weight(t, SS_FN_FREE); /* a share over all frees: each checked one by its weight */
    if (t->alloc.own_arena) {
        SS_ADD(t->alloc.frees_checked, w);
        if (a != t->alloc.own_arena) SS_ADD(t->alloc.frees_cross, w);
        return;
    }
    uint32_t *owner = ss_arena_slot(a, 0);
    uint32_t who = owner ? SS_LOAD(*owner) : 0;
    if (who == 0) return;
    SS_ADD(t->alloc.frees_checked, w);
    if (who != t->rec.serial + 1) SS_ADD(t->alloc.frees_cross, w);
}

int ss_alloc_write(void) {
    static struct ss_cross_frees_entry buf[8192];
    uint32_t n = ss_threads_cross_frees(buf, sizeof buf / sizeof *buf);
    return n ? ss_out_record(SS_REC_CROSS_FREES, buf, n * sizeof *buf, NULL, 0) : 0;
}

/* ---- mallocs counted by size (struct ss_alloc_small) ----
 * A malloc below ss_fast_bytes, the most frequent call of an allocation-bound program, costs its
 * fast part one instruction: the countdown of its size, whose slot also tells how many calls of
 * that size there were (the calls, bytes and size bucket of each follow from the size). Each size
 * is its own stream of calls, timed at random intervals as a function's calls are; a size's first
 * interval is drawn as the rest of an interval already under way (ss_first_interval), so that
 * every call is timed with the same probability, 1 / period, however few calls its size has. */

/* The calls before the first timed one of a new stream (or of one whose period changes): the
 * forward recurrence time of intervals drawn by ss_next_interval_of (uniform over 1..M,
 * M = 2 * period - 1), P(k) = P(interval >= k) / period, drawn by rejection: j uniform, kept with
 * probability j / M, gives P(M - j + 1) ~ j. */
static uint32_t ss_first_interval(struct ss_thread *t, uint32_t period) {
    uint64_t m = 2ull * period - 1;
    for (;;) {
        uint32_t j = ss_next_interval_of(t, period), u = ss_next_interval_of(t, period);
        if (u <= j) return m - j + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(m - j + 1);
    }
}

static inline enum ss_fn ss_small_fn(size_t size) { return size == SS_FREE_SLOT ? SS_FN_FREE : SS_FN_MALLOC; }

/* Sets a size's slot, whose calls so far (since `base`) are `done`, to time the call `interval`
 * calls on. A word stored whole needs no `seq`: it is odd only while a position that would pass
 * 2^32 moves into `base` and the positions restart from it. On the thread itself. */
static void ss_small_time_next(struct ss_alloc_small *s, uint32_t size, uint64_t done, uint32_t interval) {
    if (done + interval > UINT32_MAX) {
        __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&s->base[size], s->base[size] + done, __ATOMIC_RELAXED);
        union ss_small_slot next = {.part = {interval - 1, interval}};
        __atomic_store_n(&s->slot[size].word, next.word, __ATOMIC_RELAXED);
        __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
        return;
    }
    union ss_small_slot next = {.part = {interval - 1, (uint32_t)(done + interval)}};
    __atomic_store_n(&s->slot[size].word, next.word, __ATOMIC_RELAXED);
}

/* In the slow part, for a call whose size's countdown borrowed: counts it (the countdown already
 * did) and returns whether it is the call to time. */
static int ss_small_take(struct ss_thread *t, size_t size) {
    struct ss_alloc_small *s = &t->small;
    union ss_small_slot *slot = &s->slot[size];
    uint32_t at = slot->part.next_at; /* this call's position: the timed one, or 0 for the size's first */
    uint32_t period = ss_fn_period(t, ss_small_fn(size));
    if (at == 0) { /* the flusher reads the sizes in use from here (a store: only the thread writes it) */
        __atomic_store_n(&s->used[size / 64], s->used[size / 64] | 1ull << (size % 64), __ATOMIC_RELEASE);
        uint32_t first = ss_first_interval(t, period);
        if (first > 1) {
            union ss_small_slot next = {.part = {first - 2, first}};
            __atomic_store_n(&slot->word, next.word, __ATOMIC_RELAXED);
            return 0;
        }
        at = 1;
    }
    ss_small_time_next(s, size, at, ss_next_interval_of(t, period));
    return 1;
}

/* ---- the sampling period of each function (struct ss_alloc_thread) ---- */

/* Sets fn's period to `weight` configured periods and redraws the next timed call of each of fn's
 * streams as the rest of an interval of the new period (ss_first_interval): from the next call on,
 * each call is timed with probability 1 / period, while the calls timed before keep the weight
 * they were recorded with, so totals stay unbiased across the change. On the thread itself, which
 * alone writes its slots; the flusher reads each slot's word whole, and `base` under `seq`. */
static SS_NOINLINE void ss_set_period(struct ss_thread *t, enum ss_fn fn, uint32_t weight) {
    t->alloc.weight[fn] = weight;
    uint32_t period = ss_fn_period(t, fn);
    t->alloc.timed_at[fn] = t->rec.fn[fn].calls + ss_first_interval(t, period);
    if (fn != SS_FN_MALLOC && fn != SS_FN_FREE) return;
    struct ss_alloc_small *s = &t->small;
    for (uint32_t w = 0; w < sizeof s->used / sizeof s->used[0]; w++)
        for (uint64_t bits = s->used[w]; bits; bits &= bits - 1) {
            uint32_t size = w * 64 + (uint32_t)__builtin_ctzll(bits);
            union ss_small_slot slot = {.word = s->slot[size].word};
            if (ss_small_fn(size) == fn && slot.part.next_at != 0) /* its calls so far stay its own */
                ss_small_time_next(s, size, ss_slot_calls(slot), ss_first_interval(t, period));
        }
}

/* fn has had enough timed calls since the thread began or last began a phase: its period
 * lengthens, as its p50 and p99 need thousands of timed calls, not one in 256 of a hundred
 * million (docs/PERFORMANCE.md, "Timed calls: the clock"). */
static SS_NOINLINE void ss_timing_longer(struct ss_thread *t, enum ss_fn fn) {
    if (t->alloc.weight[fn] == 1) ss_set_period(t, fn, SS_TIMING_LONGER_FACTOR);
}

/* A phase begins on the thread: its functions are sampled at the configured period again until
 * they have had enough timed calls in it, so that a phase's timed calls are as many as the
 * configured period gives until they number ss_config.timed_before_longer (what the phase
 * findings count on). */
void ss_alloc_phase_begin(struct ss_thread *t) {
    if (!ss_config.timed_before_longer) return;
    for (int f = 0; f < SS_FN_COUNT; f++) {
        if (t->alloc.weight[f] != 1) ss_set_period(t, (enum ss_fn)f, 1);
        t->alloc.timed_left[f] = ss_config.timed_before_longer;
    }
}

/* The calls of one size so far, as one consistent reading (retried while `base` moves). */
static uint64_t ss_small_calls(const struct ss_alloc_small *s, uint32_t size) {
    for (int tries = 0;; tries++) {
        uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        uint64_t base = __atomic_load_n(&s->base[size], __ATOMIC_RELAXED);
        union ss_small_slot slot = {.word = __atomic_load_n(&s->slot[size].word, __ATOMIC_RELAXED)};
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if ((!(seq & 1) && seq == __atomic_load_n(&s->seq, __ATOMIC_RELAXED)) || tries == 16)
            return base + ss_slot_calls(slot);
    }
}

void ss_alloc_small_into(const struct ss_thread *t, struct ss_fn_stats *fn, uint64_t *size_hist) {
    const struct ss_alloc_small *s = &t->small;
    for (uint32_t w = 0; w < sizeof s->used / sizeof s->used[0]; w++)
        for (uint64_t bits = __atomic_load_n(&s->used[w], __ATOMIC_ACQUIRE); bits; bits &= bits - 1) {
            uint32_t size = w * 64 + (uint32_t)__builtin_ctzll(bits);
            uint64_t calls = ss_small_calls(s, size);
            if (size == SS_FREE_SLOT) {
                fn[SS_FN_FREE].calls += calls;
                continue;
            }
            fn[SS_FN_MALLOC].calls += calls;
            fn[SS_FN_MALLOC].bytes += calls * size;
            if (size_hist) size_hist[ss_small_size_bucket(size)] += calls;
        }
}

/* ---- hooks ---- */

static SS_NOINLINE void *ss_slow_small_malloc(size_t size, struct ss_thread *t);
static SS_NOINLINE void *ss_slow_malloc(size_t size, struct ss_thread *t, int route);

/* malloc's fast part: a small request counts down its size's slot; the others are counted and
 * routed as every allocation call (SS_NO_THREAD's small_below is 0: its calls go that way, to the
 * slow part). */
static inline void *ss_malloc_in(struct ss_thread *t, size_t size) {
    if (SS_LIKELY(size < t->alloc.small_below)) {
        if (SS_LIKELY(!ss_dec_borrows(&t->small.slot[size].part.left))) return ss_real.malloc(size);
        return ss_slow_small_malloc(size, t);
    }
    int route = ss_alloc_route(t, SS_FN_MALLOC, size);
    if (SS_LIKELY(route == 0)) return ss_real.malloc(size);
    return ss_slow_malloc(size, t, route);
}

/* A small malloc whose size's countdown borrowed: the size's first call, or the one to time. */
static SS_NOINLINE void *ss_slow_small_malloc(size_t size, struct ss_thread *t) {
    struct ss_thread *known = ss_known(t);
    if (SS_UNLIKELY(known != t)) { /* a node of a closed window: the call goes to the thread's new one */
        if (!known) known = ss_enter_slow();
        return known ? ss_malloc_in(known, size) : ss_real.malloc(size);
    }
    if (!ss_small_take(t, size)) return ss_real.malloc(size);
    void *p; /* below the byte-sampled stacks' bound, never always timed */
    SS_ALLOC_MEASURED(t, SS_FN_MALLOC, SS_GRP_MALLOC, size, 1, 0, 0, p, ss_real.malloc(size));
    ss_note_arena(t, p);
    return p;
}

static SS_NOINLINE void *ss_slow_malloc(size_t size, struct ss_thread *t, int route) {
    t = ss_known(t);
    if (!t) { /* a thread not known yet: counted in its new record as the fast part would have */
        t = ss_enter_slow();
        if (!t) return ss_real.malloc ? ss_real.malloc(size) : ss_bootstrap_alloc(size);
        return ss_malloc_in(t, size);
    }
    void *p;
    SS_ALLOC_SLOW(t, SS_FN_MALLOC, SS_GRP_MALLOC, size, route, p, ss_real.malloc(size));
    ss_note_arena(t, p);
    return p;
}

SS_EXPORT void *malloc(size_t size) { return ss_malloc_in(ss_self, size); }

/* Frees of large chunks leave the fast part unless they are not to be timed (ss_free_always_timed).
 * A block of the bootstrap pool has a size word (ss_chunk_header) that reads as a huge chunk, so
 * that its free takes the slow part, which knows the pool. */

static SS_NOINLINE void ss_slow_free(void *ptr, struct ss_thread *t, int fired);

/* free's fast part: its countdown (the timed call when it borrows), then, not guarded and not
 * NULL in one compare (free_fast_below is 0 for SS_NO_THREAD and for guarded calls), the chunk. */
static inline void ss_free_in(struct ss_thread *t, void *ptr) {
    if (SS_UNLIKELY(ss_dec_borrows(&t->small.slot[SS_FREE_SLOT].part.left))) {
        ss_slow_free(ptr, t, 1);
        return;
    }
    if (SS_LIKELY((uintptr_t)ptr - 1 < t->alloc.free_fast_below)) {
        size_t header = ss_chunk_header(ptr);
        /* SS_LARGE_BYTES is a multiple of 8, so the flag bits need no masking for this test. */
        if (SS_LIKELY(header < SS_LARGE_BYTES) || !ss_free_always_timed(t, ptr, header)) return ss_real.free(ptr);
    }
    ss_slow_free(ptr, t, 0);
}

/* `fired`: free's countdown borrowed (the call to time, or the thread's first free). */
static SS_NOINLINE void ss_slow_free(void *ptr, struct ss_thread *t, int fired) {
    struct ss_thread *known = ss_known(t);
    if (SS_UNLIKELY(known != t)) { /* a thread not known yet, or a node of a closed window */
        if (!known) known = ss_enter_slow();
        if (known) ss_free_in(known, ptr); /* counted in its new record as the fast part would have */
        else if (!ss_is_bootstrap(ptr) && ss_real.free) ss_real.free(ptr);
        return;
    }
    int timed = fired && ss_small_take(t, SS_FREE_SLOT);
    if (SS_UNLIKELY(ss_is_bootstrap(ptr))) { /* never the program's: not counted */
        SS_ADD(t->rec.fn[SS_FN_FREE].calls, (uint64_t)-1);
        return;
    }
    int exact = !ss_guard_calls && ptr && (ss_chunk_header(ptr) & ~(size_t)7) >= SS_LARGE_BYTES &&
                ss_free_always_timed(t, ptr, ss_chunk_header(ptr));
    if (!timed && !exact) {
        if (!ss_guard_calls) return ss_real.free(ptr);
        SS_GUARD_BEGIN(saved);
        ss_real.free(ptr);
        SS_GUARD_END(saved);
        return;
    }
    if (!exact) ss_check_free(t, ptr); /* the 1-in-N sample: an unbiased share */
    uint64_t start = ss_ticks();
    if (ss_guard_calls) {
        SS_GUARD_BEGIN(saved);
        ss_real.free(ptr);
        SS_GUARD_END(saved);
    } else {
        ss_real.free(ptr);
    }
    ss_timed(t, SS_FN_FREE, SS_GRP_FREE, ss_sampled_ticks(ss_ticks() - start, exact), exact);
}

SS_EXPORT void free(void *ptr) { ss_free_in(ss_self, ptr); }

static SS_NOINLINE void *ss_slow_calloc(size_t n, size_t size, struct ss_thread *t, int route) {
    size_t total = ss_mul_saturating(n, size);
    SS_SLOW_ENTER(t, SS_FN_CALLOC, total, route,
                  ss_real.calloc ? ss_real.calloc(n, size) : total == (size_t)-1 ? NULL : ss_bootstrap_alloc(total),
                  ss_real.calloc(n, size));
    void *p;
    SS_ALLOC_SLOW(t, SS_FN_CALLOC, SS_GRP_CALLOC, total, route, p, ss_real.calloc(n, size));
    return p;
}

SS_EXPORT void *calloc(size_t n, size_t size) {
    SS_ALLOC_ENTRY(t, SS_FN_CALLOC, ss_mul_saturating(n, size), ss_real.calloc(n, size),
                   ss_slow_calloc(n, size, t, route_));
}

static void *ss_realloc_from_bootstrap(void *ptr, size_t size) {
    void *p = malloc(size);
    if (p) {
        size_t old = ss_bootstrap_size(ptr);
        memcpy(p, ptr, old < size ? old : size);
    }
    return p;
}

static SS_NOINLINE void *ss_slow_realloc(void *ptr, size_t size, struct ss_thread *t, int route) {
    SS_SLOW_ENTER(t, SS_FN_REALLOC, size, route,
                  ss_real.realloc ? ss_real.realloc(ptr, size) : ptr ? NULL : ss_bootstrap_alloc(size),
                  ss_real.realloc(ptr, size));
    void *p;
    SS_ALLOC_SLOW(t, SS_FN_REALLOC, SS_GRP_REALLOC, size, route, p, ss_real.realloc(ptr, size));
    return p;
}

SS_EXPORT void *realloc(void *ptr, size_t size) {
    if (SS_UNLIKELY(ptr && ss_is_bootstrap(ptr))) return ss_realloc_from_bootstrap(ptr, size);
    SS_ALLOC_ENTRY(t, SS_FN_REALLOC, size, ss_real.realloc(ptr, size), ss_slow_realloc(ptr, size, t, route_));
}

/* glibc's reallocarray is an overflow check and a call of realloc through the PLT, which is our
 * hook: doing the check here and calling the real realloc records the call once. A call that
 * overflows is counted, not timed. */
static SS_NOINLINE void *ss_slow_reallocarray(void *ptr, size_t n, size_t size, struct ss_thread *t, int route) {
    size_t total = ss_mul_saturating(n, size);
    t = ss_known(t);
    if (!t) {
        t = ss_enter_slow();
        if (!t) return ss_real.reallocarray ? ss_real.reallocarray(ptr, n, size) : NULL;
        if (total == (size_t)-1) ss_count(t, SS_FN_REALLOCARRAY, total);
        else if (!(route = ss_alloc_route(t, SS_FN_REALLOCARRAY, total))) return ss_real.realloc(ptr, total);
    }
    if (total == (size_t)-1) {
        errno = ENOMEM;
        return NULL;
    }
    void *p;
    SS_ALLOC_SLOW(t, SS_FN_REALLOCARRAY, SS_GRP_REALLOC, total, route, p, ss_real.realloc(ptr, total));
    return p;
}

SS_EXPORT void *reallocarray(void *ptr, size_t n, size_t size) {
    size_t total = ss_mul_saturating(n, size);
    if (SS_UNLIKELY(ptr && ss_is_bootstrap(ptr))) {
        if (total == (size_t)-1) {
            errno = ENOMEM;
            return NULL;
        }
        return ss_realloc_from_bootstrap(ptr, total);
    }
    struct ss_thread *t = ss_self;
    int route = 0;
    if (SS_LIKELY(t != SS_NO_THREAD)) {
        if (SS_UNLIKELY(total == (size_t)-1)) ss_count(t, SS_FN_REALLOCARRAY, total);
        else if ((route = ss_alloc_route(t, SS_FN_REALLOCARRAY, total)) == 0) return ss_real.realloc(ptr, total);
    }
    return ss_slow_reallocarray(ptr, n, size, t, route);
}

static SS_NOINLINE int ss_slow_posix_memalign(void **out, size_t alignment,
                                              size_t size, struct ss_thread *t, int route) {
    SS_SLOW_ENTER(t, SS_FN_POSIX_MEMALIGN, size, route,
                  ss_real.posix_memalign ? ss_real.posix_memalign(out, alignment, size) : ENOMEM,
                  ss_real.posix_memalign(out, alignment, size));
    int rc;
    SS_ALLOC_SLOW(t, SS_FN_POSIX_MEMALIGN, SS_GRP_ALIGNED, size, route, rc,
                  ss_real.posix_memalign(out, alignment, size));
    return rc;
}

SS_EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
    SS_ALLOC_ENTRY(t, SS_FN_POSIX_MEMALIGN, size, ss_real.posix_memalign(out, alignment, size),
                   ss_slow_posix_memalign(out, alignment, size, t, route_));
}

/* aligned_alloc and memalign: (alignment, size). */
#define SS_ALIGNED_HOOK(name, fn)                                                                            \
    static SS_NOINLINE void *ss_slow_##name(size_t alignment, size_t size, struct ss_thread *t, int route) { \
        SS_SLOW_ENTER(t, fn, size, route, ss_real.name ? ss_real.name(alignment, size) : NULL,              \
                      ss_real.name(alignment, size));                                                       \
        void *p;                                                                                            \
        SS_ALLOC_SLOW(t, fn, SS_GRP_ALIGNED, size, route, p, ss_real.name(alignment, size));                \
        return p;                                                                                           \
    }                                                                                                       \
    SS_EXPORT void *name(size_t alignment, size_t size) {                                                   \
        SS_ALLOC_ENTRY(t, fn, size, ss_real.name(alignment, size), ss_slow_##name(alignment, size, t, route_)); \
    }
SS_ALIGNED_HOOK(aligned_alloc, SS_FN_ALIGNED_ALLOC)
SS_ALIGNED_HOOK(memalign, SS_FN_MEMALIGN)

/* valloc and pvalloc: (size). */
#define SS_PAGE_HOOK(name, fn)                                                                               \
    static SS_NOINLINE void *ss_slow_##name(size_t size, struct ss_thread *t, int route) {                  \
        SS_SLOW_ENTER(t, fn, size, route, ss_real.name ? ss_real.name(size) : NULL, ss_real.name(size));    \
        void *p;                                                                                            \
        SS_ALLOC_SLOW(t, fn, SS_GRP_ALIGNED, size, route, p, ss_real.name(size));                           \
        return p;                                                                                           \
    }                                                                                                       \
    SS_EXPORT void *name(size_t size) { SS_ALLOC_ENTRY(t, fn, size, ss_real.name(size), ss_slow_##name(size, t, route_)); }
SS_PAGE_HOOK(valloc, SS_FN_VALLOC)
SS_PAGE_HOOK(pvalloc, SS_FN_PVALLOC)

SS_EXPORT size_t malloc_usable_size(void *ptr) {
    if (ptr && ss_is_bootstrap(ptr)) return ss_bootstrap_size(ptr);
    ss_ensure_resolved();
    return ss_real.malloc_usable_size ? ss_real.malloc_usable_size(ptr) : 0;
}

/* A new window (attach.c): the arenas' last allocators were threads of the last one (serials
 * start again from 0). */
void ss_alloc_window_reset(void) { memset(ss_arena_owner, 0, sizeof ss_arena_owner); }
