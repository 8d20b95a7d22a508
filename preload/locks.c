/* pthread lock hooks.
 *
 * A lock call whose lock looks free is counted and leaves by a tail call: a free-looking lock is
 * one its call acquires (perhaps after a wait, if another thread takes it in between), so the
 * count needs no result. A lock that looks taken goes to the slow part, which tries it first (a
 * lock that is in fact free is no wait), then times the blocking call exactly and counts the
 * acquisition if there is one. Try-locks and the timed and clock variants, whose calls may fail,
 * are counted from their result. A release only ends a timed hold, when the lock has one. The
 * clock is read only for a wait or a hold in the timed sample. Each hook is split like the
 * allocation hooks: an inline fast part without a stack frame, and a slow part in a function of
 * its own (ss_slow_*), where the contended paths are.
 *
 * "Looks free" reads the lock's word in glibc's public layout: a mutex's __lock (0 when unlocked,
 * for every type; a mutex that its own thread holds, a robust one whose owner died, or a
 * priority-protected one never reads 0, so a free-looking mutex cannot fail), a spin lock's int,
 * a read-write lock's __readers (glibc 2.25 and later: no writer holds it or waits for it, so
 * neither EDEADLK nor a wait for one). A lock taken in the instant between the look and the
 * acquisition is missed as contention: a small undercount, never a false wait. A stepped mutex
 * (lock_steps.h) looks at nothing: its failed step goes on with glibc's own wait in the hook, and
 * a contended acquisition is one that slept (ss_mutex_contended). */
#include "ss_internal.h"

#include "lock_steps.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

/* ---- looks at a lock word ----
 * One instruction with the word as its memory operand and the flags as the result (a plain
 * relaxed atomic load would be a load into a register, then the test): an aligned 32-bit read,
 * atomic on x86-64 as the relaxed load is. */

/* Whether the lock word at `w` is 0. */
static inline int ss_word_is_zero(const int *w) {
#if defined(__x86_64__)
    int zero;
    __asm__("cmpl $0, %1" : "=@ccz"(zero) : "m"(*w));
    return zero;
#else
    return __atomic_load_n(w, __ATOMIC_RELAXED) == 0;
#endif
}

/* Whether the lock word at `w`, unsigned, is above `v`. */
static inline int ss_word_above(const int *w, unsigned v) {
#if defined(__x86_64__)
    int above;
    __asm__ volatile("cmpl %2, %1" : "=@cca"(above) : "m"(*w), "i"(v));
    return above;
#else
    return (unsigned)__atomic_load_n(w, __ATOMIC_RELAXED) > v;
#endif
}

/* Whether the lock word at `w` has none of the bits of `mask`. */
static inline int ss_word_has_none(const unsigned *w, unsigned mask) {
#if defined(__x86_64__)
    int zero;
    __asm__("testl %2, %1" : "=@ccz"(zero) : "m"(*w), "i"(mask));
    return zero;
#else
    return (__atomic_load_n(w, __ATOMIC_RELAXED) & mask) == 0;
#endif
}

/* ---- the per-thread lock table ---- */

static inline uint32_t ss_lock_hash(const void *address) {
    return (uint32_t)((((uintptr_t)address >> 4) * 0x9E3779B97F4A7C15ull) >> 56);
}

/* A slot's lock and kind as one word, never 0 (a kind is 1 or more); user addresses fit in 60 bits. */
_Static_assert(SS_LOCK_KIND_SLOTS <= 16, "a lock kind fits in 4 bits of its key");
static inline uint64_t ss_lock_key(const void *address, uint32_t kind) {
    return ((uint64_t)(uintptr_t)address << 4) | kind;
}

static uint32_t ss_lock_slot(struct ss_thread *t, const void *address, uint32_t kind) {
    uintptr_t a = (uintptr_t)address;
    uint64_t key = ss_lock_key(address, kind);
    uint32_t h = ss_lock_hash(address);
    for (uint32_t i = 0; i < SS_LOCK_PROBES; i++) {
        uint32_t s = (h + i) & (SS_LOCK_SLOTS - 1);
        uint64_t k = t->locks.keys[s];
        if (k == key) return s;
        if (k == 0) {
            /* The key first: a signal handler's lock call in between then finds this slot taken
             * (one store wide, where the check and the claim were a window before). */
            t->locks.keys[s] = key;
            struct ss_lock_stats *l = &t->locks.table[s];
            SS_STORE(l->kind, kind);
            __atomic_store_n(&l->address, a, __ATOMIC_RELEASE);
            return s;
        }
    }
    if (!(t->rec.flags & SS_THREAD_LOCKS_OVERFLOW)) __atomic_or_fetch(&t->rec.flags, SS_THREAD_LOCKS_OVERFLOW, __ATOMIC_RELAXED);
    SS_STORE(t->locks.table[SS_LOCK_OVERFLOW].kind, kind);
    return SS_LOCK_OVERFLOW;
}

/* A fast part counts into the slot the thread used last for a lock of the kind (one compare of
 * the lock's address: the kind is the hook's constant), or else into the first slot the lock's
 * hash probes if it is the lock's. */
static inline void ss_lock_remember(struct ss_thread *t, const void *address, uint32_t kind, struct ss_lock_stats *l) {
    t->locks.last[kind].address = (uintptr_t)address;
    t->locks.last[kind].slot = l;
}

/* The lock's slot if the thread has one for it (kept as the last used), else NULL. */
static inline struct ss_lock_stats *ss_lock_slot_probe(struct ss_thread *t, const void *address, uint32_t kind) {
    uint64_t key = ss_lock_key(address, kind);
    uint32_t h = ss_lock_hash(address);
    for (uint32_t i = 0; i < SS_LOCK_PROBES; i++) {
        uint32_t s = (h + i) & (SS_LOCK_SLOTS - 1);
        uint64_t k = t->locks.keys[s];
        if (SS_LIKELY(k == key)) {
            struct ss_lock_stats *l = &t->locks.table[s];
            ss_lock_remember(t, address, kind, l);
            return l;
        }
        if (k == 0) break;
    }
    return NULL;
}

/* The slot of a lock for a slow part: the last used for its kind, or found (and then kept as the
 * last used, unless it is the overflow slot, which stands for many locks). */
static uint32_t ss_lock_slot_cached(struct ss_thread *t, const void *address, uint32_t kind) {
    if (t->locks.last[kind].address == (uintptr_t)address) return (uint32_t)(t->locks.last[kind].slot - t->locks.table);
    uint32_t slot = ss_lock_slot(t, address, kind);
    if (slot != SS_LOCK_OVERFLOW) ss_lock_remember(t, address, kind, &t->locks.table[slot]);
    return slot;
}

uint32_t ss_lock_slot_for(struct ss_thread *t, const void *address, uint32_t kind) {
    return ss_lock_slot_cached(t, address, kind);
}

/* The lock part of a node, for a new thread (ss_thread_reset, threads.c). Slots are cleared one
 * by one, only where used: untouched pages of the table stay untouched (and a node that was
 * never used, all zeros, is not read at all). */
void ss_locks_thread_reset(struct ss_thread *t) {
    struct ss_locks_thread *l = &t->locks;
    if (t->magic == SS_NODE_MAGIC)
        for (uint32_t i = 0; i <= SS_LOCK_SLOTS; i++)
            if (l->table[i].address || l->table[i].kind) {
                memset(&l->table[i], 0, sizeof l->table[i]);
                if (i < SS_LOCK_SLOTS) l->keys[i] = 0;
            }
    l->countdown = ss_next_lock_interval(t);
    l->nheld = 0;
    memset(l->last, 0, sizeof l->last);
    l->holder_skip = 0;
    l->last_cond = 0;
    l->last_cond_slot = 0;
    l->last_cond_acquisitions = 0;
    l->pending_lock = 0;
    l->pending_cond = 0;
}

/* ---- timed holds ---- */

/* The index of this thread's timed hold of `address`, or -1. */
static inline int ss_find_held(struct ss_thread *t, const void *address) {
    for (uint32_t i = t->locks.nheld; i-- > 0;)
        if (t->locks.held[i].address == (uintptr_t)address) return (int)i;
    return -1;
}

/* Starts a timed hold of `lock`, acquired at `now`. */
static void ss_hold_begin(struct ss_thread *t, const void *lock, uint32_t slot, uint64_t now) {
    if (t->locks.nheld >= SS_HELD_MAX) return;
    struct ss_held *h = &t->locks.held[t->locks.nheld++];
    h->address = (uintptr_t)lock;
    h->slot = slot;
    h->start = now;
}

/* Ends a timed hold at time `now` (read before the lock was released). */
static void ss_end_hold(struct ss_thread *t, int i, uint64_t now) {
    struct ss_held *h = &t->locks.held[i];
    struct ss_lock_stats *l = &t->locks.table[h->slot];
    SS_ADD(l->timed_holds, 1);
    SS_ADD(l->hold_ticks, now - h->start);
    t->locks.held[i] = t->locks.held[--t->locks.nheld];
}

/* ---- the shared slow paths ---- */

/* Records a wait for `lock` of `ticks` that ended in an acquisition (`acquired`) or not. */
static void ss_waited(struct ss_thread *t, uint32_t slot, uint64_t ticks, int acquired) {
    SS_ADD(t->rec.lock_wait_ticks, ticks);
    if (!acquired) return;
    struct ss_lock_stats *l = &t->locks.table[slot];
    SS_ADD(l->contended, 1);
    SS_ADD(l->wait_ticks, ticks);
    if (ticks > l->max_wait_ticks) SS_STORE(l->max_wait_ticks, ticks);
}

/* Counts an acquisition of `lock` (slow part). */
static inline uint32_t ss_count_acquisition(struct ss_thread *t, const void *lock, uint32_t kind) {
    uint32_t slot = ss_lock_slot_cached(t, lock, kind);
    SS_INC(t->locks.table[slot].acquisitions, 1);
    return slot;
}

/* The slow part of a lock call, for `t` known (or SS_NO_THREAD: not yet) and its countdown already
 * decremented by the fast part. `looks_free` says how the lock looks; `try_call` is the try for
 * a lock that looks taken (EBUSY: none, straight to the blocking call). Returns the call's
 * result. */
#define SS_LOCK_SLOW(t, lock, kind, looks_free, try_call, block_call)                                        \
    do {                                                                                                    \
        t = ss_known(t);                                                                                    \
        if (!t) {                                                                                           \
            t = ss_enter_slow();                                                                            \
            if (!t) return block_call;                                                                      \
            t->locks.countdown--;                                                                            \
        }                                                                                                   \
        int timed_ = t->locks.countdown == 0;                                                                \
        if (timed_) t->locks.countdown = ss_next_lock_interval(t);                                           \
        int free_ = (looks_free);                                                                           \
        int rc_ = free_ ? (block_call) : (try_call);                                                        \
        if (free_ || rc_ != EBUSY) {                                                                        \
            if (rc_ == 0 || rc_ == EOWNERDEAD) {                                                            \
                uint32_t slot_ = ss_count_acquisition(t, lock, kind);                                       \
                if (timed_) ss_hold_begin(t, lock, slot_, ss_ticks());                                      \
            }                                                                                               \
            return rc_;                                                                                     \
        }                                                                                                   \
        uint32_t slot_ = ss_lock_slot_cached(t, lock, kind);                                                \
        uint32_t site_ = ss_stacks_on ? ss_lock_waiter_stack(t, lock, kind) : 0;                            \
        uint32_t owner_ = ss_wait_owner(lock, kind); /* wait-for edge (waitfor.c) */                         \
        uint64_t start_ = ss_ticks();                                                                       \
        if ((kind) != SS_LOCK_SPIN) ss_wait_enter(t, start_); /* a spin lock waits on a CPU */              \
        rc_ = block_call;                                                                                   \
        uint64_t end_ = ss_ticks();                                                                         \
        if ((kind) != SS_LOCK_SPIN) ss_wait_leave(t, start_, end_);                                         \
        int acquired_ = rc_ == 0 || rc_ == EOWNERDEAD;                                                      \
        if (acquired_)                                                                                      \
            ss_wait_lock(t, lock, kind, owner_, start_, end_,                                               \
                         (kind) == SS_LOCK_MUTEX ? ss_lock_woken_us(lock, start_, end_) : 0);               \
        if (acquired_) SS_INC(t->locks.table[slot_].acquisitions, 1);                                             \
        ss_waited(t, slot_, end_ - start_, acquired_);                                                      \
        if (site_ && acquired_) ss_lock_waiter_done(site_, end_ - start_);                                  \
        if (acquired_ && timed_) ss_hold_begin(t, lock, slot_, end_);                                       \
        return rc_;                                                                                         \
    } while (0)

/* The fast part of a lock call that cannot fail once its lock looks free: counted and forwarded
 * when the lock's slot is at hand, the lock looks free and the hold is not timed. `t` may be
 * SS_NO_THREAD, which has no slot: it goes to the slow part untouched (the slow part decrements
 * the countdown of the record it finds); a thread's countdown is decremented before. */
#define SS_LOCK_FAST(t, lock, kind, looks_free, real_call, slow_call)                                        \
    do {                                                                                                    \
        struct ss_lock_stats *l_;                                                                           \
        if (SS_LIKELY(t->locks.last[kind].address == (uintptr_t)(lock))) {                                   \
            l_ = t->locks.last[kind].slot;                                                                   \
        } else if (SS_UNLIKELY((l_ = ss_lock_slot_probe(t, lock, kind)) == NULL)) {                         \
            if (t != SS_NO_THREAD) t->locks.countdown--;                                                     \
            return slow_call;                                                                               \
        }                                                                                                   \
        /* The countdown: decremented and tested by one instruction (ss_dec_is_zero). */                   \
        if (SS_LIKELY(!ss_dec_is_zero(&t->locks.countdown)) && SS_LIKELY(looks_free)) {                      \
            SS_INC(l_->acquisitions, 1);                                                                    \
            return real_call;                                                                               \
        }                                                                                                   \
        return slow_call;                                                                                   \
    } while (0)

/* A try-lock: counted when it succeeds. */
#define SS_TRYLOCK(lock, kind, try_call)                                                                     \
    do {                                                                                                    \
        struct ss_thread *t_ = ss_enter();                                                                  \
        int rc_ = try_call;                                                                                 \
        if (rc_ == 0 && t_) ss_count_acquisition(t_, lock, kind);                                           \
        return rc_;                                                                                         \
    } while (0)

/* Ends the timed hold of `lock` a release ends, if it has one (slow part). */
static void ss_release_hold(struct ss_thread *t, const void *lock) {
    int i = ss_find_held(t, lock);
    if (i >= 0) ss_end_hold(t, i, ss_ticks());
}

/* Whether a release can take its fast part: the thread has no timed hold to end (SS_NO_THREAD
 * has one, so it takes the slow part). */
static inline int ss_no_timed_hold(struct ss_thread *t) {
    return ss_word_is_zero((const int *)&t->locks.nheld);
}

/* The slow part of a release. */
#define SS_UNLOCK_SLOW(t, lock, real_call)                                                                   \
    do {                                                                                                    \
        t = ss_known(t);                                                                                    \
        if (!t) {                                                                                           \
            t = ss_enter_slow();                                                                            \
            if (!t) return real_call;                                                                       \
        }                                                                                                   \
        ss_release_hold(t, lock); /* the clock read before the release */                                   \
        return real_call;                                                                                   \
    } while (0)

/* ---- mutexes ---- */

/* A free lock word means no wait (see the top of this file); looking at it avoids the second
 * atomic on a contended cache line that a try-lock would cost. */
static inline int ss_mutex_looks_free(pthread_mutex_t *m) {
    return ss_word_is_zero(&m->__data.__lock);
}

/* Whether threads wait for `m`: glibc's lock word is 2 for a normal, recursive, error-checking or
 * adaptive mutex with waiters, and has FUTEX_WAITERS set for a robust or priority-inheriting one. */
static inline int ss_mutex_has_waiters(pthread_mutex_t *m) {
    int w = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
    return w == 2 || (w & (int)0x80000000u) != 0;
}

#define SS_UNPAREN(...) __VA_ARGS__
/* A lock call `name(params)` that cannot fail once its lock looks free: its fast part, and its
 * slow part `ss_slow_<name>`. */
#define SS_LOCK_CALL_HOOK(name, params, args, lock, kind, looks_free, try_call, block_call)                  \
    static SS_NOINLINE int ss_slow_##name(SS_UNPAREN params, struct ss_thread *t) {                        \
        SS_LOCK_SLOW(t, lock, kind, looks_free, try_call, block_call);                                      \
    }                                                                                                       \
    SS_EXPORT int name(SS_UNPAREN params) {                                                                \
        struct ss_thread *t = ss_self;                                                                      \
        SS_LOCK_FAST(t, lock, kind, looks_free, block_call, ss_slow_##name(SS_UNPAREN args, t));            \
    }

/* A timed or clock lock call, which may fail (time out) even on a free-looking lock: always its
 * slow part, which counts from the result. */
#define SS_TIMED_LOCK_HOOK(name, params, args, lock, kind, looks_free, try_call, block_call)                 \
    SS_EXPORT int name(SS_UNPAREN params) {                                                                \
        struct ss_thread *t = ss_self;                                                                      \
        if (SS_LIKELY(t != SS_NO_THREAD)) t->locks.countdown--;                                              \
        SS_LOCK_SLOW(t, lock, kind, looks_free, try_call, block_call);                                      \
    }

/* Records the mutex wait the thread has pending (ss_mutex_contended): its contention and wait
 * time, the wait-for edge; called after the release, or before anything that must see it. */
static SS_NOINLINE void ss_mutex_wait_record(struct ss_thread *t) {
    struct ss_locks_thread *l = &t->locks;
    /* read, then cleared: a signal handler's lock call in between sees none, or all of it */
    const void *m = (const void *)l->pending_lock;
    uint32_t slot = l->pending_slot, owner = l->pending_owner;
    uint64_t ticks = l->pending_ticks, end = l->pending_end;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    l->pending_lock = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    ss_waited(t, slot, ticks, 1);
    ss_wait_lock(t, m, SS_LOCK_MUTEX, owner, end - ticks, end, ss_lock_woken_us(m, end - ticks, end));
}

/* A steppable mutex whose step failed: glibc's next steps at once, in its order (lock_steps.h).
 * A lock taken by the exchange is an acquisition without a wait, as glibc's own path makes it (the
 * lock word left at 2, so that its release wakes, as glibc's does). Between the exchange that
 * tells the holder a thread waits and the sleep, only the clock is read: the longer a waiter that
 * has set 2 stays awake, the more often the holder's wake finds nobody asleep and the waiter's
 * sleep fails at once (EAGAIN). After the sleep the thread holds the lock, and work there makes
 * the other thread find it taken more often: only the acquisition is counted, and the wait is
 * recorded after the release (the lock word is 2 until then, so the release takes the hook's slow
 * part, which records it; a condition wait records it first). The owner (the wait-for edge) is
 * read before, one load of the line the failed step just touched. A waiter's stack is taken (at
 * most 100 a second) in the hold, the call chain being the lock call's. `t` is known, with a
 * thread id. Measured by benches/faithfulness.sh (docs/PERFORMANCE.md, "Faithfulness"). */
static inline __attribute__((always_inline)) int ss_mutex_contended(pthread_mutex_t *m, struct ss_thread *t, int timed) {
    uint32_t owner = (uint32_t)__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
    if (ss_mutex_grab_step(m)) {
        ss_mutex_owned_step(m, t->rec.tid);
        uint32_t slot = ss_count_acquisition(t, m, SS_LOCK_MUTEX);
        if (timed) ss_hold_begin(t, m, slot, ss_ticks());
        return 0;
    }
    if (!owner) owner = (uint32_t)__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED); /* mid-hand-over */
    uint64_t start = ss_ticks();
    ss_wait_enter(t, start);
    ss_mutex_sleep_step(m);
    uint64_t end = ss_ticks();
    ss_wait_leave(t, start, end);
    ss_mutex_owned_step(m, t->rec.tid);
    uint32_t slot = ss_count_acquisition(t, m, SS_LOCK_MUTEX);
    if (SS_UNLIKELY(t->locks.pending_lock != 0)) ss_mutex_wait_record(t); /* an earlier one, still held */
    struct ss_locks_thread *l = &t->locks;
    l->pending_slot = slot;
    l->pending_owner = owner;
    l->pending_ticks = end - start;
    l->pending_end = end;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the fields before the lock that says they are there */
    l->pending_lock = (uintptr_t)m;
    if (timed) ss_hold_begin(t, m, slot, end);
    if (SS_UNLIKELY(ss_stacks_on) && ss_lock_waiter_stack_due(t, end)) {
        uint32_t site = ss_lock_waiter_stack(t, m, SS_LOCK_MUTEX);
        if (site) ss_lock_waiter_done(site, end - start);
    }
    return 0;
}

/* The slow part of a mutex lock call. On a steppable mutex with the steps on: after its step
 * failed (`failed`: straight to glibc's next steps), or untried (the lock's slot not at hand, a
 * timed hold, a thread not known yet): the step, then glibc's next steps if it fails; a thread
 * without an id (see ss_mutex_lock_step) goes to glibc's function. Any other mutex: glibc's
 * function, with a look at the word first. Named after the hook (ss_slow_<symbol>), which
 * tail-calls it: a stack taken in a wait here shows pthread_mutex_lock. */
static SS_NOINLINE int ss_slow_pthread_mutex_lock(pthread_mutex_t *m, struct ss_thread *t, int failed) {
    if (t == SS_NO_THREAD && !ss_real.mutex_lock) return 0; /* while the interposer resolves the real functions */
    if (ss_config.mutex_steps && ss_mutex_steppable(m)) {
        t = ss_known(t);
        if (!t) {
            t = ss_enter_slow();
            if (!t) return ss_real.mutex_lock(m);
            t->locks.countdown--;
        }
        if (SS_LIKELY(t->rec.tid != 0)) {
            int timed = t->locks.countdown == 0;
            if (timed) t->locks.countdown = ss_next_lock_interval(t);
            if (!failed && ss_mutex_lock_step(m, t->rec.tid)) {
                uint32_t slot = ss_count_acquisition(t, m, SS_LOCK_MUTEX);
                if (timed) ss_hold_begin(t, m, slot, ss_ticks());
                return 0;
            }
            return ss_mutex_contended(m, t, timed);
        }
    }
    SS_LOCK_SLOW(t, m, SS_LOCK_MUTEX, ss_mutex_looks_free(m), EBUSY, ss_real.mutex_lock(m));
}

/* A free private normal mutex is locked by glibc's own step (lock_steps.h), others forwarded.
 * The steppable case is SS_LOCK_FAST spelt out, so that a failed step goes on to glibc's next
 * steps without trying the word again. */
SS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_self;
    if (SS_LIKELY(ss_config.mutex_steps) && SS_LIKELY(ss_mutex_steppable(m))) {
        struct ss_lock_stats *l;
        if (SS_LIKELY(t->locks.last[SS_LOCK_MUTEX].address == (uintptr_t)m)) {
            l = t->locks.last[SS_LOCK_MUTEX].slot;
        } else if (SS_UNLIKELY((l = ss_lock_slot_probe(t, m, SS_LOCK_MUTEX)) == NULL)) {
            if (t != SS_NO_THREAD) t->locks.countdown--;
            return ss_slow_pthread_mutex_lock(m, t, 0);
        }
        if (SS_UNLIKELY(ss_dec_is_zero(&t->locks.countdown))) return ss_slow_pthread_mutex_lock(m, t, 0);
        uint32_t tid = t->rec.tid;
        if (SS_LIKELY(ss_mutex_lock_step(m, tid))) {
            SS_INC(l->acquisitions, 1);
            return 0;
        }
        return ss_slow_pthread_mutex_lock(m, t, tid != 0);
    }
    SS_LOCK_FAST(t, m, SS_LOCK_MUTEX, ss_mutex_looks_free(m), ss_real.mutex_lock(m), ss_slow_pthread_mutex_lock(m, t, 0));
}
SS_TIMED_LOCK_HOOK(pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *abstime), (m, abstime), m,
                   SS_LOCK_MUTEX, ss_mutex_looks_free(m), EBUSY, ss_real.mutex_timedlock(m, abstime))
SS_TIMED_LOCK_HOOK(pthread_mutex_clocklock, (pthread_mutex_t * m, clockid_t clock, const struct timespec *abstime),
                   (m, clock, abstime), m, SS_LOCK_MUTEX, ss_mutex_looks_free(m), EBUSY,
                   ss_real.mutex_clocklock(m, clock, abstime))

SS_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m) {
    SS_TRYLOCK(m, SS_LOCK_MUTEX, ss_real.mutex_trylock ? ss_real.mutex_trylock(m) : 0);
}

/* The release in the unlock's slow part (the mutex may have waiters): by the step where it
 * applies (the same exchange and wake as glibc's release), else by glibc. `woke_at` gets the
 * clock read before a wake that woke a waiter (else 0), for that waiter's record of how much of
 * its wait was its own wake-up after the release (ss_lock_woken_us): read once the lock word is
 * free, not in the hold. A forwarded release reads it before the call, where glibc's release of
 * a mutex with waiters (not a recursive mutex's inner release) wakes one. */
static inline int ss_mutex_release_waking(pthread_mutex_t *m, uint64_t *woke_at) {
    *woke_at = 0;
    if (SS_LIKELY(ss_config.mutex_steps) && SS_LIKELY(ss_mutex_steppable(m))) {
        if (ss_mutex_unlock_step_begin(m)) {
            uint64_t at = ss_ticks();
            if (ss_futex_wake_one(&m->__data.__lock) > 0) *woke_at = at;
        }
        return 0;
    }
    uint64_t at = ss_mutex_has_waiters(m) && m->__data.__count <= 1 ? ss_ticks() : 0;
    int rc = ss_real.mutex_unlock(m);
    if (rc == 0) *woke_at = at;
    return rc;
}

/* What a thread had left to record until it released `m`: a wait for it, a condition wait that
 * returned into its hold (in the order they happened: a wait's push records the condition wait
 * first). */
static inline void ss_after_mutex_release(struct ss_thread *t, pthread_mutex_t *m) {
    if (t->locks.pending_cond != 0 && t->locks.pending_cond_mutex == (uintptr_t)m) ss_cond_wait_record(t);
    if (t->locks.pending_lock == (uintptr_t)m) ss_mutex_wait_record(t);
}

/* Measured on two threads ping-ponging a mutex: any work after the unlock or inside the critical
 * section shifts the hand-over between the threads (docs/PERFORMANCE.md), so a release does as
 * little as it can before its tail call. */
static SS_NOINLINE int ss_slow_pthread_mutex_unlock(pthread_mutex_t *m, struct ss_thread *t) {
    t = ss_known(t);
    if (!t) {
        t = ss_enter_slow();
        if (!t) return ss_real.mutex_unlock ? ss_real.mutex_unlock(m) : 0;
    }
    if (t->locks.nheld != 0) ss_release_hold(t, m);
    /* A holder stack is considered on one release with waiters in 64 (and then rate-limited by
     * time): on a hot lock, leaving the tail call or reading the clock on every such release
     * changes the hand-over between the threads and costs more than the rest of the hook. */
    int holder_stack = SS_UNLIKELY(ss_stacks_on && ss_mutex_has_waiters(m)) && t->locks.holder_skip-- == 0;
    if (holder_stack) t->locks.holder_skip = 63;
    uint64_t woke_at;
    int rc = ss_mutex_release_waking(m, &woke_at); /* first: the waiters must not wait for our stack */
    if (holder_stack) ss_lock_holder_stack(t, m, SS_LOCK_MUTEX);
    ss_after_mutex_release(t, m);
    /* after this thread's own pending wait has read the note of the release that let it in */
    if (woke_at) ss_note_waker(m, t->rec.tid, 0, woke_at);
    return rc;
}

/* Releases that may have waiters take the slow part, which considers a holder stack: a lock word
 * above 1 (waiters of a normal, recursive, error-checking or adaptive mutex; any lock word of a
 * robust or priority-inheriting one, the holder's thread id, which the slow part then looks at
 * closely). One compare, whether stacks are on or not (off, such a release only passes through
 * the slow part). */
SS_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_self;
    if (SS_LIKELY(!ss_word_above(&m->__data.__lock, 1)) && SS_LIKELY(ss_no_timed_hold(t))) {
        if (SS_LIKELY(ss_config.mutex_steps) && SS_LIKELY(ss_mutex_steppable(m))) {
            ss_mutex_unlock_step(m); /* lock_steps.h */
            return 0;
        }
        return ss_real.mutex_unlock(m);
    }
    return ss_slow_pthread_mutex_unlock(m, t);
}

/* ---- condition variables: the mutex is released while waiting and re-acquired before return
 * (also on a timeout), which counts as an acquisition. ---- */

/* Marks of a pending condition wait (pending_cond_flags). */
#define SS_COND_WOKEN 1u  /* returned 0: recorded as a wait, with its waker */
#define SS_COND_REWAIT 2u /* began without an acquisition of the mutex since the last wake-up */

/* Records the condition wait the thread has pending (ss_cond_wait_done): the wait, the mutex's
 * re-acquisition and the marks a later wait on the same condition variable reads. */
SS_NOINLINE void ss_cond_wait_record(struct ss_thread *t) {
    struct ss_locks_thread *l = &t->locks;
    /* read, then cleared: a signal handler's lock call in between sees none, or all of it */
    const void *c = (const void *)l->pending_cond, *m = (const void *)l->pending_cond_mutex;
    uint64_t waker = l->pending_cond_waker, start = l->pending_cond_start, end = l->pending_cond_end;
    uint32_t flags = l->pending_cond_flags;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    l->pending_cond = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (flags & SS_COND_WOKEN) ss_wait_cond_end(t, c, waker, start, end, (flags & SS_COND_REWAIT) != 0);
    uint32_t slot = ss_count_acquisition(t, m, SS_LOCK_MUTEX);
    l->last_cond = flags & SS_COND_WOKEN ? (uintptr_t)c : 0; /* after a timeout: not a wake-up */
    l->last_cond_slot = slot;
    l->last_cond_acquisitions = SS_LOAD(l->table[slot].acquisitions);
}

void ss_locks_record_pending(struct ss_thread *t) {
    if (t->locks.pending_cond != 0) ss_cond_wait_record(t);
    if (t->locks.pending_lock != 0) ss_mutex_wait_record(t);
}

/* After a condition wait returned `rc`, with the mutex held again: the clock was read; the
 * waker slot is read now, before another notification can move it; the rest waits until the
 * mutex is released (pending_cond: measured by benches/faithfulness.sh --program cond4). A hold
 * to time starts at once, its re-acquisition counted with it. */
static inline void ss_cond_wait_done(struct ss_thread *t, const void *c, const void *m, int rc, uint64_t stamp,
                                     uint64_t start, uint64_t end, int rewait) {
    struct ss_locks_thread *l = &t->locks;
    l->last_cond = 0;
    if (rc != 0 && rc != ETIMEDOUT && rc != EOWNERDEAD) return; /* the mutex not acquired again */
    l->pending_cond_mutex = (uintptr_t)m;
    l->pending_cond_waker = rc == 0 ? ss_waker_of(c, stamp) : 0;
    l->pending_cond_start = start;
    l->pending_cond_end = end;
    l->pending_cond_flags = (rc == 0 ? SS_COND_WOKEN : 0) | (rewait ? SS_COND_REWAIT : 0);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the fields before the mark that says they are there */
    l->pending_cond = (uintptr_t)c;
    if (SS_UNLIKELY(ss_take_timed_hold(t))) {
        ss_cond_wait_record(t);
        ss_hold_begin(t, m, l->last_cond_slot, ss_ticks());
    }
}

/* A condition wait. What it records before the call is read while the thread holds the mutex, and
 * kept to a few loads and a clock read; what it records after, once the mutex is released. */
#define SS_COND_HOOK(t, m, wait_call)                                                                        \
    do {                                                                                                    \
        if (t->locks.pending_cond != 0) ss_cond_wait_record(t); /* an earlier wait, the mutex held since */ \
        if (t->locks.nheld != 0) ss_release_hold(t, m);                                                     \
        if (t->locks.pending_lock != 0) ss_mutex_wait_record(t); /* glibc releases the mutex */            \
        /* no acquisition of the mutex since the last wait on `c` returned: woken for nothing */            \
        int rewait_ = t->locks.last_cond == (uintptr_t)c &&                                                 \
                      SS_LOAD(t->locks.table[t->locks.last_cond_slot].acquisitions) == t->locks.last_cond_acquisitions; \
        uint64_t stamp_ = ss_wait_cond_begin(c), start_ = ss_ticks(); /* its waker (waitfor.c) */          \
        ss_wait_enter(t, start_);                                                                           \
        int rc_ = wait_call;                                                                                \
        uint64_t end_ = ss_ticks();                                                                         \
        ss_wait_leave(t, start_, end_);                                                                     \
        ss_cond_wait_done(t, c, m, rc_, stamp_, start_, end_, rewait_);                                     \
        return rc_;                                                                                         \
    } while (0)

SS_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.cond_wait(c, m);
    SS_COND_HOOK(t, m, ss_real.cond_wait(c, m));
}

SS_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.cond_timedwait(c, m, abstime);
    SS_COND_HOOK(t, m, ss_real.cond_timedwait(c, m, abstime));
}

SS_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                     const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.cond_clockwait(c, m, clock, abstime);
    SS_COND_HOOK(t, m, ss_real.cond_clockwait(c, m, clock, abstime));
}

/* ---- read-write locks ----
 * glibc (2.25 and later) keeps in __readers the number of readers (from bit 3) and the writer's
 * state: bit 0 the write phase, bit 1 a writer holds it or is about to, bit 2 readers wait for a
 * writer to go first. A reader gets in at once in the read phase with no writer (bits 0 and 1
 * clear); a writer when there is neither reader nor writer. */
static inline int ss_rwlock_looks_free_read(pthread_rwlock_t *l) {
    return ss_word_has_none(&l->__data.__readers, 3u);
}

/* No writer (bit 1) and no reader (bits 3 and up). */
static inline int ss_rwlock_looks_free_write(pthread_rwlock_t *l) {
    return ss_word_has_none(&l->__data.__readers, ~5u);
}

static SS_NOINLINE int ss_slow_pthread_rwlock_rdlock(pthread_rwlock_t *l, struct ss_thread *t) {
    SS_LOCK_SLOW(t, l, SS_LOCK_RWLOCK_READ, ss_rwlock_looks_free_read(l), ss_real.rwlock_tryrdlock(l),
                 ss_real.rwlock_rdlock(l));
}

SS_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_self;
    if (SS_LIKELY(ss_config.rwlock_steps))
        SS_LOCK_FAST(t, l, SS_LOCK_RWLOCK_READ, ss_rwlock_read_step(l), 0, ss_slow_pthread_rwlock_rdlock(l, t));
    SS_LOCK_FAST(t, l, SS_LOCK_RWLOCK_READ, ss_rwlock_looks_free_read(l), ss_real.rwlock_rdlock(l),
                 ss_slow_pthread_rwlock_rdlock(l, t));
}
SS_LOCK_CALL_HOOK(pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l), l, SS_LOCK_RWLOCK_WRITE,
                  ss_rwlock_looks_free_write(l), ss_real.rwlock_trywrlock(l), ss_real.rwlock_wrlock(l))
SS_TIMED_LOCK_HOOK(pthread_rwlock_timedrdlock, (pthread_rwlock_t * l, const struct timespec *abstime), (l, abstime),
                   l, SS_LOCK_RWLOCK_READ, ss_rwlock_looks_free_read(l), ss_real.rwlock_tryrdlock(l),
                   ss_real.rwlock_timedrdlock(l, abstime))
SS_TIMED_LOCK_HOOK(pthread_rwlock_clockrdlock,
                   (pthread_rwlock_t * l, clockid_t clock, const struct timespec *abstime), (l, clock, abstime), l,
                   SS_LOCK_RWLOCK_READ, ss_rwlock_looks_free_read(l), ss_real.rwlock_tryrdlock(l),
                   ss_real.rwlock_clockrdlock(l, clock, abstime))
SS_TIMED_LOCK_HOOK(pthread_rwlock_timedwrlock, (pthread_rwlock_t * l, const struct timespec *abstime), (l, abstime),
                   l, SS_LOCK_RWLOCK_WRITE, ss_rwlock_looks_free_write(l), ss_real.rwlock_trywrlock(l),
                   ss_real.rwlock_timedwrlock(l, abstime))
SS_TIMED_LOCK_HOOK(pthread_rwlock_clockwrlock,
                   (pthread_rwlock_t * l, clockid_t clock, const struct timespec *abstime), (l, clock, abstime), l,
                   SS_LOCK_RWLOCK_WRITE, ss_rwlock_looks_free_write(l), ss_real.rwlock_trywrlock(l),
                   ss_real.rwlock_clockwrlock(l, clock, abstime))

SS_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) {
    SS_TRYLOCK(l, SS_LOCK_RWLOCK_READ, ss_real.rwlock_tryrdlock(l));
}

SS_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l) {
    SS_TRYLOCK(l, SS_LOCK_RWLOCK_WRITE, ss_real.rwlock_trywrlock(l));
}

static SS_NOINLINE int ss_slow_pthread_rwlock_unlock(pthread_rwlock_t *l, struct ss_thread *t) {
    SS_UNLOCK_SLOW(t, l, ss_real.rwlock_unlock(l));
}

/* A release with no timed hold: a reader's step done here when it can be (lock_steps.h), else
 * forwarded. */
SS_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_self;
    if (SS_LIKELY(ss_no_timed_hold(t))) {
        if (SS_LIKELY(ss_config.rwlock_steps) && ss_rwlock_unread_step(l)) return 0;
        return ss_real.rwlock_unlock(l);
    }
    return ss_slow_pthread_rwlock_unlock(l, t);
}

/* ---- spin locks ----
 * Which value means unlocked depends on glibc's implementation (1 on x86-64, 0 in the generic
 * one): it is read once from a lock that pthread_spin_init made. */
static int ss_spin_free_value = -1; /* none known yet: nothing looks free */

void ss_locks_init(void) {
    pthread_spinlock_t probe;
    int (*init)(pthread_spinlock_t *, int) = NULL;
    *(void **)&init = dlsym(RTLD_NEXT, "pthread_spin_init");
    if (init && init(&probe, PTHREAD_PROCESS_PRIVATE) == 0) ss_spin_free_value = (int)probe;
    ss_lock_steps_init();
    ss_waitfor_init();
}

static inline int ss_spin_looks_free(pthread_spinlock_t *l) {
    return __atomic_load_n(l, __ATOMIC_RELAXED) == ss_spin_free_value;
}

SS_LOCK_CALL_HOOK(pthread_spin_lock, (pthread_spinlock_t * l), (l), (const void *)l, SS_LOCK_SPIN,
                  ss_spin_looks_free(l), ss_real.spin_trylock(l), ss_real.spin_lock(l))

SS_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l) {
    SS_TRYLOCK((const void *)l, SS_LOCK_SPIN, ss_real.spin_trylock(l));
}

static SS_NOINLINE int ss_slow_pthread_spin_unlock(pthread_spinlock_t *l, struct ss_thread *t) {
    SS_UNLOCK_SLOW(t, (const void *)l, ss_real.spin_unlock(l));
}

SS_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l) {
    struct ss_thread *t = ss_self;
    if (SS_LIKELY(ss_no_timed_hold(t))) return ss_real.spin_unlock(l);
    return ss_slow_pthread_spin_unlock(l, t);
}

/* ---- locks a runtime reports (OpenMP's entry points, omp.c; ITT collectors' sync calls, itt.c) ---- */

static uint64_t ss_runtime_wait_min; /* ticks: an acquisition that took longer waited */

/* The slot of a runtime's lock object in the thread's table: found before the acquisition by the
 * hooks that take its first step, so that what the hold pays is an increment. */
struct ss_lock_stats *ss_runtime_slot(struct ss_thread *t, const void *object, uint32_t kind) {
    return &t->locks.table[ss_lock_slot_for(t, object, kind)];
}

/* Opens a timed hold of `object` (slot `l`) acquired at `now` (0: the clock not read yet), the lock
 * hooks' countdown having run out: holds are timed on their period (one acquisition in 256 on
 * average, as pthread locks' holds), since a clock read at each end of every hold would cost a
 * critical section of a few nanoseconds 20 ns more. It opens in the thread's table of
 * open holds (whose pthread locks never share an address with these objects), so no thread-local
 * storage of its own is needed, which a process attached to later could not spare. */
void ss_runtime_hold(struct ss_thread *t, const void *object, struct ss_lock_stats *l, uint64_t now) {
    t->locks.countdown = ss_next_lock_interval(t);
    if (t->locks.nheld < SS_HELD_MAX)
        t->locks.held[t->locks.nheld++] =
            (struct ss_held){(uintptr_t)object, (uint32_t)(l - t->locks.table), now ? now : ss_ticks()};
}

/* An acquisition of `object` (slot `l`) that took `wait` ticks and ended at `now`: counted; it
 * waited when the caller found the object held (`found_held`), else when it took over a
 * microsecond (its stack taken after the wait: the call chain is the same). */
void ss_runtime_waited(struct ss_thread *t, const void *object, uint32_t kind, struct ss_lock_stats *l, uint64_t wait,
                       uint64_t now, int found_held) {
    SS_ADD(l->acquisitions, 1);
    if (SS_UNLIKELY(ss_runtime_wait_min == 0)) ss_runtime_wait_min = ss_ticks_per_sec / 1000000 + 1;
    if (found_held || wait > ss_runtime_wait_min) {
        SS_ADD(l->contended, 1);
        SS_ADD(l->wait_ticks, wait);
        if (wait > l->max_wait_ticks) SS_STORE(l->max_wait_ticks, wait);
        SS_ADD(t->rec.lock_wait_ticks, wait);
        uint32_t site = ss_stacks_on ? ss_lock_waiter_stack(t, object, kind) : 0;
        if (site) ss_lock_waiter_done(site, wait);
    }
    if (SS_UNLIKELY(ss_dec_is_zero(&t->locks.countdown))) ss_runtime_hold(t, object, l, now);
}

void ss_runtime_acquired(struct ss_thread *t, const void *object, uint32_t kind, uint64_t wait, uint64_t now,
                         int found_held) {
    ss_runtime_waited(t, object, kind, ss_runtime_slot(t, object, kind), wait, now, found_held);
}

/* The release of an object ss_runtime_acquired opened a hold of (none: nothing to do). */
void ss_runtime_releasing(struct ss_thread *t, const void *object) {
    for (uint32_t i = t->locks.nheld; i-- > 0;) {
        if (t->locks.held[i].address != (uintptr_t)object) continue;
        struct ss_lock_stats *l = &t->locks.table[t->locks.held[i].slot];
        SS_ADD(l->timed_holds, 1);
        SS_ADD(l->hold_ticks, ss_ticks() - t->locks.held[i].start);
        t->locks.held[i] = t->locks.held[--t->locks.nheld];
        return;
    }
}
