/* pthread lock hooks. The uncontended path stays cheap: the clock is read only when the lock is
 * found taken (the wait is then timed exactly) or when the hold is in the timed sample. Read-write
 * and spin locks try first; mutexes look at their lock word (see below). */
#include "ss_internal.h"

#include <errno.h>

static inline uint32_t ss_lock_slot(struct ss_thread *t, const void *address, uint32_t kind) {
    uintptr_t a = (uintptr_t)address;
    uint32_t h = (uint32_t)(((a >> 4) * 0x9E3779B97F4A7C15ull) >> 56);
    for (uint32_t i = 0; i < SS_LOCK_PROBES; i++) {
        uint32_t s = (h + i) & (SS_LOCK_SLOTS - 1);
        struct ss_lock_stats *l = &t->locks[s];
        if (l->address == a && l->kind == kind) return s;
        if (l->address == 0) {
            SS_STORE(l->kind, kind);
            __atomic_store_n(&l->address, a, __ATOMIC_RELEASE);
            return s;
        }
    }
    if (!(t->rec.flags & SS_THREAD_LOCKS_OVERFLOW)) __atomic_or_fetch(&t->rec.flags, SS_THREAD_LOCKS_OVERFLOW, __ATOMIC_RELAXED);
    SS_STORE(t->locks[SS_LOCK_OVERFLOW].kind, kind);
    return SS_LOCK_OVERFLOW;
}

/* Records an acquisition into slot `s`; `wait` (ticks) counts only when `contended`. `now` is the
 * time of acquisition when already known (0 otherwise). This runs inside the critical section, so
 * it is kept to a few stores: the slot was looked up before the lock was taken, and a hold is
 * tracked only when it is in the timed sample. */
static inline void ss_acquired(struct ss_thread *t, uint32_t s, const void *address, int contended, uint64_t wait,
                               uint64_t now) {
    struct ss_lock_stats *l = &t->locks[s];
    SS_ADD(l->acquisitions, 1);
    if (contended) {
        SS_ADD(l->contended, 1);
        SS_ADD(l->wait_ticks, wait);
        if (wait > l->max_wait_ticks) SS_STORE(l->max_wait_ticks, wait);
        SS_ADD(t->rec.lock_wait_ticks, wait);
    }
    if (SS_UNLIKELY(ss_take_timed(t)) && t->nheld < SS_HELD_MAX) {
        struct ss_held *h = &t->held[t->nheld++];
        h->address = (uintptr_t)address;
        h->slot = s;
        h->start = now ? now : ss_ticks();
    }
}

/* The index of this thread's timed hold of `address`, or -1. */
static inline int ss_find_held(struct ss_thread *t, const void *address) {
    for (uint32_t i = t->nheld; i-- > 0;)
        if (t->held[i].address == (uintptr_t)address) return (int)i;
    return -1;
}

/* Ends a timed hold at time `now` (read before the lock was released). */
static void ss_end_hold(struct ss_thread *t, int i, uint64_t now) {
    struct ss_held *h = &t->held[i];
    struct ss_lock_stats *l = &t->locks[h->slot];
    SS_ADD(l->timed_holds, 1);
    SS_ADD(l->hold_ticks, now - h->start);
    t->held[i] = t->held[--t->nheld];
}

/* Try first; on failure time the blocking call. The blocking call's result is returned. */
#define SS_LOCK_HOOK(t, lock, kind, try_call, block_call)                                                    \
    do {                                                                                                    \
        uint32_t slot_ = ss_lock_slot(t, lock, kind);                                                       \
        int rc_ = try_call;                                                                                 \
        if (SS_LIKELY(rc_ == 0)) {                                                                          \
            ss_acquired(t, slot_, lock, 0, 0, 0);                                                           \
            return 0;                                                                                       \
        }                                                                                                   \
        uint32_t site_ = ss_stacks_on ? ss_lock_waiter_stack(t, lock, kind) : 0;                            \
        uint64_t start_ = ss_ticks();                                                                       \
        rc_ = block_call;                                                                                   \
        uint64_t end_ = ss_ticks();                                                                         \
        if (rc_ == 0 || rc_ == EOWNERDEAD) ss_acquired(t, slot_, lock, 1, end_ - start_, end_);             \
        if (site_ && (rc_ == 0 || rc_ == EOWNERDEAD)) ss_lock_waiter_done(site_, end_ - start_);            \
        else if (rc_ == ETIMEDOUT) SS_ADD(t->rec.lock_wait_ticks, end_ - start_);                           \
        return rc_;                                                                                         \
    } while (0)

/* A program's own try-lock: counted when it succeeds, never a wait. */
#define SS_TRYLOCK_HOOK(t, lock, kind, try_call)                                                             \
    do {                                                                                                    \
        uint32_t slot_ = ss_lock_slot(t, lock, kind);                                                       \
        int rc_ = try_call;                                                                                 \
        if (rc_ == 0) ss_acquired(t, slot_, lock, 0, 0, 0);                                                 \
        return rc_;                                                                                         \
    } while (0)

/* Release first, then account: nothing is added to the critical section unless the hold is timed. */
#define SS_UNLOCK_HOOK(t, lock, unlock_call)                                                                 \
    do {                                                                                                    \
        if (SS_LIKELY(t->nheld == 0)) return unlock_call;                                                   \
        int held_ = ss_find_held(t, lock);                                                                  \
        if (held_ < 0) return unlock_call;                                                                  \
        uint64_t now_ = ss_ticks();                                                                         \
        int rc_ = unlock_call;                                                                              \
        ss_end_hold(t, held_, now_);                                                                        \
        return rc_;                                                                                         \
    } while (0)

/* ---- mutexes ----
 * Mutexes are the hottest locks: a lock call whose lock word is free is a plain tail call, and the
 * acquisition is counted when the mutex is released. Only a wait, or a hold in the timed sample,
 * reads the clock. */

/* A free lock word means no wait. The word is glibc's public-ABI `__data.__lock`, 0 when unlocked
 * for every mutex type; looking at it avoids the second atomic on a contended cache line that a
 * try-lock would cost. A lock taken in the instant between the look and the acquisition is missed
 * as contention: a small undercount, never a false wait. */
static inline int ss_mutex_looks_free(pthread_mutex_t *m) {
    return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0;
}

/* Whether threads wait for `m`: glibc's lock word is 2 for a normal, recursive, error-checking or
 * adaptive mutex with waiters, and has FUTEX_WAITERS set for a robust or priority-inheriting one. */
static inline int ss_mutex_has_waiters(pthread_mutex_t *m) {
    int w = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
    return w == 2 || (w & (int)0x80000000u) != 0;
}

/* Starts a timed hold of `m`, acquired at `now`. */
static void ss_hold_begin(struct ss_thread *t, const void *m, uint32_t slot, uint64_t now) {
    if (t->nheld >= SS_HELD_MAX) return;
    struct ss_held *h = &t->held[t->nheld++];
    h->address = (uintptr_t)m;
    h->slot = slot;
    h->start = now;
}

/* Counts the acquisition a release ends, and ends its timed hold if it has one. */
static inline void ss_mutex_releasing(struct ss_thread *t, pthread_mutex_t *m) {
    uint32_t slot = ss_lock_slot(t, m, SS_LOCK_MUTEX);
    SS_ADD(t->locks[slot].acquisitions, 1);
    if (SS_UNLIKELY(t->nheld != 0)) {
        int i = ss_find_held(t, m);
        if (i >= 0) ss_end_hold(t, i, ss_ticks());
    }
}

/* The shared body of lock, timedlock and clocklock. */
#define SS_MUTEX_LOCK_HOOK(t, m, real_call)                                                                  \
    do {                                                                                                    \
        if (SS_LIKELY(ss_mutex_looks_free(m))) {                                                            \
            if (SS_LIKELY(!ss_take_timed(t))) return real_call;                                             \
            int rc_ = real_call;                                                                            \
            if (rc_ == 0) ss_hold_begin(t, m, ss_lock_slot(t, m, SS_LOCK_MUTEX), ss_ticks());               \
            return rc_;                                                                                     \
        }                                                                                                   \
        uint32_t slot_ = ss_lock_slot(t, m, SS_LOCK_MUTEX);                                                 \
        uint32_t site_ = ss_stacks_on ? ss_lock_waiter_stack(t, m, SS_LOCK_MUTEX) : 0;                      \
        uint64_t start_ = ss_ticks();                                                                       \
        int rc_ = real_call;                                                                                \
        uint64_t end_ = ss_ticks();                                                                         \
        if (site_ && (rc_ == 0 || rc_ == EOWNERDEAD)) ss_lock_waiter_done(site_, end_ - start_);            \
        struct ss_lock_stats *l_ = &t->locks[slot_];                                                        \
        SS_ADD(t->rec.lock_wait_ticks, end_ - start_);                                                      \
        if (rc_ == 0 || rc_ == EOWNERDEAD) {                                                                \
            SS_ADD(l_->contended, 1);                                                                       \
            SS_ADD(l_->wait_ticks, end_ - start_);                                                          \
            if (end_ - start_ > l_->max_wait_ticks) SS_STORE(l_->max_wait_ticks, end_ - start_);            \
            if (ss_take_timed(t)) ss_hold_begin(t, m, slot_, end_);                                         \
        }                                                                                                   \
        return rc_;                                                                                         \
    } while (0)

SS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_lock ? ss_real.mutex_lock(m) : 0;
    SS_MUTEX_LOCK_HOOK(t, m, ss_real.mutex_lock(m));
}

/* A successful try-lock is counted, like every acquisition, when the mutex is released. */
SS_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m) {
    ss_ensure_resolved();
    return ss_real.mutex_trylock ? ss_real.mutex_trylock(m) : 0;
}

SS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_timedlock(m, abstime);
    SS_MUTEX_LOCK_HOOK(t, m, ss_real.mutex_timedlock(m, abstime));
}

SS_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_clocklock(m, clock, abstime);
    SS_MUTEX_LOCK_HOOK(t, m, ss_real.mutex_clocklock(m, clock, abstime));
}

/* Measured on two threads ping-ponging a mutex: counting just before a tail-called unlock costs
 * far less than any work after the unlock or after the lock, which shifts the hand-over between
 * the threads (docs/PERFORMANCE.md). */
SS_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_unlock ? ss_real.mutex_unlock(m) : 0;
    ss_mutex_releasing(t, m);
    /* A holder stack is considered on one release with waiters in 64 (and then rate-limited by
     * time): on a hot lock, leaving the tail call or reading the clock on every such release
     * changes the hand-over between the threads and costs more than the rest of the hook. */
    if (SS_UNLIKELY(ss_stacks_on && ss_mutex_has_waiters(m)) && t->holder_skip-- == 0) {
        t->holder_skip = 63;
        int rc = ss_real.mutex_unlock(m); /* release first: the waiters must not wait for our stack */
        ss_lock_holder_stack(t, m, SS_LOCK_MUTEX);
        return rc;
    }
    return ss_real.mutex_unlock(m);
}

/* ---- condition variables: the mutex is released while waiting and re-acquired before return;
 * the release counts the acquisition before it, as an unlock would. ---- */

#define SS_COND_HOOK(t, m, wait_call)                                                                        \
    do {                                                                                                    \
        ss_mutex_releasing(t, m);                                                                           \
        int rc_ = wait_call;                                                                                \
        if ((rc_ == 0 || rc_ == ETIMEDOUT || rc_ == EOWNERDEAD) && ss_take_timed(t))                        \
            ss_hold_begin(t, m, ss_lock_slot(t, m, SS_LOCK_MUTEX), ss_ticks());                             \
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

/* ---- read-write locks ---- */

SS_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_rdlock(l);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_READ, ss_real.rwlock_tryrdlock(l), ss_real.rwlock_rdlock(l));
}

SS_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_tryrdlock(l);
    SS_TRYLOCK_HOOK(t, l, SS_LOCK_RWLOCK_READ, ss_real.rwlock_tryrdlock(l));
}

SS_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_timedrdlock(l, abstime);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_READ, ss_real.rwlock_tryrdlock(l), ss_real.rwlock_timedrdlock(l, abstime));
}

SS_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_clockrdlock(l, clock, abstime);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_READ, ss_real.rwlock_tryrdlock(l),
                 ss_real.rwlock_clockrdlock(l, clock, abstime));
}

SS_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_wrlock(l);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_WRITE, ss_real.rwlock_trywrlock(l), ss_real.rwlock_wrlock(l));
}

SS_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_trywrlock(l);
    SS_TRYLOCK_HOOK(t, l, SS_LOCK_RWLOCK_WRITE, ss_real.rwlock_trywrlock(l));
}

SS_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_timedwrlock(l, abstime);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_WRITE, ss_real.rwlock_trywrlock(l), ss_real.rwlock_timedwrlock(l, abstime));
}

SS_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_clockwrlock(l, clock, abstime);
    SS_LOCK_HOOK(t, l, SS_LOCK_RWLOCK_WRITE, ss_real.rwlock_trywrlock(l),
                 ss_real.rwlock_clockwrlock(l, clock, abstime));
}

SS_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.rwlock_unlock(l);
    SS_UNLOCK_HOOK(t, l, ss_real.rwlock_unlock(l));
}

/* ---- spin locks ---- */

SS_EXPORT int pthread_spin_lock(pthread_spinlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.spin_lock(l);
    SS_LOCK_HOOK(t, (const void *)l, SS_LOCK_SPIN, ss_real.spin_trylock(l), ss_real.spin_lock(l));
}

SS_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.spin_trylock(l);
    SS_TRYLOCK_HOOK(t, (const void *)l, SS_LOCK_SPIN, ss_real.spin_trylock(l));
}

SS_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.spin_unlock(l);
    SS_UNLOCK_HOOK(t, (const void *)l, ss_real.spin_unlock(l));
}
