/* Allocator hooks: every call is counted with its requested bytes and size bucket; a random
 * 1-in-N sample (every call in exact mode) is also timed, because reading the clock around each
 * call would cost more than the fast path of malloc itself. */
#include "ss_internal.h"

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
    memcpy(p, &size, sizeof size); /* the block's size, for realloc and malloc_usable_size */
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

/* ---- accounting ---- */

static inline uint32_t ss_size_bucket(size_t n) {
    if (n <= 256) return n == 0 ? 0 : (uint32_t)((n - 1) >> 3);
    return SS_SIZE_FINE_BUCKETS + (uint32_t)(64 - __builtin_clzll((unsigned long long)(n - 1))) - 9;
}

static inline uint32_t ss_latency_bucket(uint64_t ns) {
    uint32_t b = (uint32_t)(63 - __builtin_clzll(ns | 1));
    return b < SS_LAT_BUCKETS ? b : SS_LAT_BUCKETS - 1;
}

static inline void ss_count(struct ss_thread *t, enum ss_fn fn, size_t bytes) {
    struct ss_fn_stats *f = &t->rec.fn[fn];
    SS_ADD(f->calls, 1);
    if (fn != SS_FN_FREE) {
        SS_ADD(f->bytes, bytes);
        SS_ADD(t->rec.size_hist[ss_size_bucket(bytes)], 1);
    }
}

/* Records a measured call: one always timed (it stands for itself in the histogram) or one of the
 * random sample (it stands for `period` calls). */
static inline void ss_timed(struct ss_thread *t, enum ss_fn fn, enum ss_group grp, uint64_t ticks, int exact) {
    struct ss_fn_stats *f = &t->rec.fn[fn];
    if (exact) {
        SS_ADD(f->exact_calls, 1);
        SS_ADD(f->exact_ticks, ticks);
    } else {
        SS_ADD(f->timed_calls, 1);
        SS_ADD(f->timed_ticks, ticks);
    }
    SS_ADD(t->rec.lat_hist[grp][ss_latency_bucket(ss_ticks_to_ns(ticks))], exact ? 1u : ss_config.period);
}

/* Calls likely to be slow are always timed, since a 1-in-N sample would miss the rare call that
 * costs more than all the others together: a request this large is a large-bin request in glibc,
 * which first consolidates the fast bins (with millions of free chunks: tens of milliseconds). */
#define SS_EXACT_BYTES 1000u

/* A sampled call stands for `period` calls, so one that was descheduled for milliseconds would
 * count as many times over. Its duration is capped: a small request that takes longer than this
 * was almost certainly preempted (the calls that are really slow are in the always-timed stratum,
 * which is never capped). */
static inline uint64_t ss_sampled_ticks(uint64_t ticks, int exact) {
    return !exact && ticks > ss_sample_cap_ticks ? ss_sample_cap_ticks : ticks;
}

static inline size_t ss_mul_saturating(size_t a, size_t b) {
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? (size_t)-1 : r;
}

/* The body shared by every hook: count, then forward. Untimed calls to glibc's allocator leave by a
 * tail call, which keeps the common path to a few instructions; a timed or guarded call reads the
 * clock around the real function. `ret` receives the result. */
#define SS_RECORDED_CALL(t, fn, grp, bytes, ret, real_call)                                                  \
    do {                                                                                                    \
        size_t bytes_ = (bytes);                                                                            \
        ss_count(t, fn, bytes_);                                                                            \
        int timed_ = ss_take_timed(t);                                                                      \
        int bfired_ = ss_take_bytes(t, bytes_);                                                             \
        int exact_ = bytes_ >= SS_EXACT_BYTES;                                                              \
        if (SS_LIKELY(!(timed_ | bfired_ | exact_) && !ss_guard_calls)) return real_call;                   \
        if (SS_UNLIKELY(ss_child_flusher_due)) ss_child_flusher_check();                                    \
        uint32_t site_ = (timed_ | bfired_) ? ss_stack_sample(t, fn, bytes_, timed_, bfired_) : 0;          \
        timed_ |= exact_;                                                                                   \
        uint64_t start_ = (timed_ || site_) ? ss_ticks() : 0;                                               \
        SS_GUARD_BEGIN(saved_);                                                                             \
        ret = real_call;                                                                                    \
        SS_GUARD_END(saved_);                                                                               \
        if (timed_ || site_) {                                                                              \
            uint64_t ticks_ = ss_sampled_ticks(ss_ticks() - start_, exact_);                                \
            if (timed_) ss_timed(t, fn, grp, ticks_, exact_);                                               \
            if (site_) ss_stack_time(t, site_, ticks_);                                                        \
        }                                                                                                   \
    } while (0)

/* ---- cross-thread frees (glibc's allocator only) ----
 * A chunk's header says which arena holds it: the main arena, or (NON_MAIN_ARENA bit) the arena
 * whose heap_info starts at the chunk's address rounded down to HEAP_MAX_SIZE (64 MiB on 64-bit).
 * glibc gives threads their own arenas (up to 8 per core). Sampled allocations note which thread
 * last allocated from each arena; a sampled free of a chunk whose arena another thread allocates
 * from is a free of memory another thread allocated. Threads that share an arena are told apart
 * only as far as the last allocator is (an undercount). */
#define SS_CHUNK_MMAPPED 2u
#define SS_CHUNK_NON_MAIN_ARENA 4u
#define SS_HEAP_MAX_SIZE (64ul * 1024 * 1024)
#define SS_MAIN_ARENA ((uintptr_t)1)
#define SS_ARENA_SLOTS 256u

static struct {
    uintptr_t arena; /* 0: free; claimed with a CAS */
    uint32_t serial;  /* the thread that last allocated from it (sampled) */
} ss_arena_owner[SS_ARENA_SLOTS];

static inline uintptr_t ss_arena_of(const void *p) {
    size_t size = ((const size_t *)p)[-1];
    if (size & SS_CHUNK_MMAPPED) return 0;
    if (!(size & SS_CHUNK_NON_MAIN_ARENA)) return SS_MAIN_ARENA;
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

/* Called on sampled allocations only (after the fast path has returned). Serials count from 0,
 * so the slot stores serial + 1 (0: not yet known). */
static inline void ss_note_arena(struct ss_thread *t, const void *p) {
    if (!p || ss_guard_calls || ss_is_bootstrap(p)) return;
    uintptr_t a = ss_arena_of(p);
    uint32_t *owner = a ? ss_arena_slot(a, 1) : NULL;
    if (owner && SS_LOAD(*owner) != t->rec.serial + 1) SS_STORE(*owner, t->rec.serial + 1);
}

static inline void ss_check_free(struct ss_thread *t, const void *p) {
    if (!p || ss_guard_calls || ss_is_bootstrap(p)) return;
    uintptr_t a = ss_arena_of(p);
    uint32_t *owner = a ? ss_arena_slot(a, 0) : NULL;
    uint32_t who = owner ? SS_LOAD(*owner) : 0;
    if (who == 0) return;
    SS_ADD(t->frees_checked, 1);
    if (who != t->rec.serial + 1) SS_ADD(t->frees_cross, 1);
}

int ss_alloc_write(void) {
    static struct ss_cross_frees_entry buf[8192];
    uint32_t n = ss_threads_cross_frees(buf, sizeof buf / sizeof *buf);
    return n ? ss_out_record(SS_REC_CROSS_FREES, buf, n * sizeof *buf, NULL, 0) : 0;
}

/* ---- hooks ---- */

SS_EXPORT void *malloc(size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.malloc ? ss_real.malloc(size) : ss_bootstrap_alloc(size);
    void *p;
    SS_RECORDED_CALL(t, SS_FN_MALLOC, SS_GRP_MALLOC, size, p, ss_real.malloc(size));
    ss_note_arena(t, p);
    return p;
}

SS_EXPORT void free(void *ptr) {
    if (SS_UNLIKELY(ss_is_bootstrap(ptr))) return;
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) {
        if (ss_real.free) ss_real.free(ptr);
        return;
    }
    ss_count(t, SS_FN_FREE, 0);
    /* Freeing a large chunk can consolidate the heap: always timed. With glibc's allocator the
     * chunk's size is in the word before it (its low 3 bits are flags). */
    int exact = !ss_guard_calls && ptr && (((const size_t *)ptr)[-1] & ~(size_t)7) >= SS_EXACT_BYTES;
    int timed = exact || ss_take_timed(t);
    if (SS_LIKELY(!timed && !ss_guard_calls)) return ss_real.free(ptr);
    if (!exact) ss_check_free(t, ptr); /* the 1-in-N sample: an unbiased share */
    uint64_t start = timed ? ss_ticks() : 0;
    SS_GUARD_BEGIN(saved);
    ss_real.free(ptr);
    SS_GUARD_END(saved);
    if (timed) ss_timed(t, SS_FN_FREE, SS_GRP_FREE, ss_sampled_ticks(ss_ticks() - start, exact), exact);
}

SS_EXPORT void *calloc(size_t n, size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) {
        if (ss_real.calloc) return ss_real.calloc(n, size);
        size_t total = ss_mul_saturating(n, size);
        return total == (size_t)-1 ? NULL : ss_bootstrap_alloc(total);
    }
    void *p;
    SS_RECORDED_CALL(t, SS_FN_CALLOC, SS_GRP_CALLOC, ss_mul_saturating(n, size), p, ss_real.calloc(n, size));
    return p;
}

static void *ss_realloc_from_bootstrap(void *ptr, size_t size) {
    void *p = malloc(size);
    if (p) {
        size_t old = ss_bootstrap_size(ptr);
        memcpy(p, ptr, old < size ? old : size);
    }
    return p;
}

SS_EXPORT void *realloc(void *ptr, size_t size) {
    if (SS_UNLIKELY(ptr && ss_is_bootstrap(ptr))) return ss_realloc_from_bootstrap(ptr, size);
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) {
        if (ss_real.realloc) return ss_real.realloc(ptr, size);
        return ptr ? NULL : ss_bootstrap_alloc(size);
    }
    void *p;
    SS_RECORDED_CALL(t, SS_FN_REALLOC, SS_GRP_REALLOC, size, p, ss_real.realloc(ptr, size));
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
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.reallocarray ? ss_real.reallocarray(ptr, n, size) : NULL;
    /* glibc's reallocarray is this overflow check and a call of realloc through the PLT, which is
     * our hook: doing the check here and calling the real realloc records the call once. */
    if (total == (size_t)-1) {
        ss_count(t, SS_FN_REALLOCARRAY, total);
        errno = ENOMEM;
        return NULL;
    }
    void *p;
    SS_RECORDED_CALL(t, SS_FN_REALLOCARRAY, SS_GRP_REALLOC, total, p, ss_real.realloc(ptr, total));
    return p;
}

SS_EXPORT int posix_memalign(void **out, size_t alignment, size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.posix_memalign ? ss_real.posix_memalign(out, alignment, size) : ENOMEM;
    int rc;
    SS_RECORDED_CALL(t, SS_FN_POSIX_MEMALIGN, SS_GRP_ALIGNED, size, rc, ss_real.posix_memalign(out, alignment, size));
    return rc;
}

SS_EXPORT void *aligned_alloc(size_t alignment, size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.aligned_alloc ? ss_real.aligned_alloc(alignment, size) : NULL;
    void *p;
    SS_RECORDED_CALL(t, SS_FN_ALIGNED_ALLOC, SS_GRP_ALIGNED, size, p, ss_real.aligned_alloc(alignment, size));
    return p;
}

SS_EXPORT void *memalign(size_t alignment, size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.memalign ? ss_real.memalign(alignment, size) : NULL;
    void *p;
    SS_RECORDED_CALL(t, SS_FN_MEMALIGN, SS_GRP_ALIGNED, size, p, ss_real.memalign(alignment, size));
    return p;
}

SS_EXPORT void *valloc(size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.valloc ? ss_real.valloc(size) : NULL;
    void *p;
    SS_RECORDED_CALL(t, SS_FN_VALLOC, SS_GRP_ALIGNED, size, p, ss_real.valloc(size));
    return p;
}

SS_EXPORT void *pvalloc(size_t size) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.pvalloc ? ss_real.pvalloc(size) : NULL;
    void *p;
    SS_RECORDED_CALL(t, SS_FN_PVALLOC, SS_GRP_ALIGNED, size, p, ss_real.pvalloc(size));
    return p;
}

SS_EXPORT size_t malloc_usable_size(void *ptr) {
    if (ptr && ss_is_bootstrap(ptr)) return ss_bootstrap_size(ptr);
    ss_ensure_resolved();
    return ss_real.malloc_usable_size ? ss_real.malloc_usable_size(ptr) : 0;
}
