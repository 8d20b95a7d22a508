/* pthread lock hooks. The uncontended path stays cheap: a try-lock first, and the clock is read
 * only when that fails (the wait is then timed exactly) or when the hold is in the timed sample. */
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

/* Records an acquisition; `wait` is in ticks and only meaningful when `contended`. `now` is the
 * time of acquisition when already known (0 otherwise). */
static void ss_acquired(struct ss_thread *t, const void *address, uint32_t kind, int contended, uint64_t wait,
                        uint64_t now) {
    uint32_t s = ss_lock_slot(t, address, kind);
    struct ss_lock_stats *l = &t->locks[s];
    SS_ADD(l->acquisitions, 1);
    if (contended) {
        SS_ADD(l->contended, 1);
        SS_ADD(l->wait_ticks, wait);
        if (wait > l->max_wait_ticks) SS_STORE(l->max_wait_ticks, wait);
        SS_ADD(t->rec.lock_wait_ticks, wait);
    }
    if (t->nheld < SS_HELD_MAX) {
        struct ss_held *h = &t->held[t->nheld++];
        h->address = (uintptr_t)address;
        h->slot = s;
        h->timed = ss_take_timed(t);
        h->start = h->timed ? (now ? now : ss_ticks()) : 0;
    }
}

/* Ends the hold of `address` by this thread, if it was tracked (locks can be released by the
 * thread that took them only, except rwlocks and spinlocks misused; unknown ones are ignored). */
static void ss_released(struct ss_thread *t, const void *address) {
    for (uint32_t i = t->nheld; i-- > 0;) {
        struct ss_held *h = &t->held[i];
        if (h->address != (uintptr_t)address) continue;
        if (h->timed) {
            struct ss_lock_stats *l = &t->locks[h->slot];
            SS_ADD(l->timed_holds, 1);
            SS_ADD(l->hold_ticks, ss_ticks() - h->start);
        }
        t->held[i] = t->held[--t->nheld];
        return;
    }
}

/* Try first; on failure time the blocking call. The blocking call's result is returned. */
#define SS_LOCK_HOOK(t, lock, kind, try_call, block_call)                                                    \
    do {                                                                                                    \
        int rc_ = try_call;                                                                                 \
        if (SS_LIKELY(rc_ == 0)) {                                                                          \
            ss_acquired(t, lock, kind, 0, 0, 0);                                                            \
            return 0;                                                                                       \
        }                                                                                                   \
        uint64_t start_ = ss_ticks();                                                                       \
        rc_ = block_call;                                                                                   \
        uint64_t end_ = ss_ticks();                                                                         \
        if (rc_ == 0 || rc_ == EOWNERDEAD) ss_acquired(t, lock, kind, 1, end_ - start_, end_);              \
        else if (rc_ == ETIMEDOUT) SS_ADD(t->rec.lock_wait_ticks, end_ - start_);                           \
        return rc_;                                                                                         \
    } while (0)

/* A program's own try-lock: counted when it succeeds, never a wait. */
#define SS_TRYLOCK_HOOK(t, lock, kind, try_call)                                                             \
    do {                                                                                                    \
        int rc_ = try_call;                                                                                 \
        if (rc_ == 0) ss_acquired(t, lock, kind, 0, 0, 0);                                                  \
        return rc_;                                                                                         \
    } while (0)

#define SS_UNLOCK_HOOK(t, lock, unlock_call)                                                                 \
    do {                                                                                                    \
        ss_released(t, lock);                                                                               \
        return unlock_call;                                                                                 \
    } while (0)

/* ---- mutexes ---- */

SS_EXPORT int pthread_mutex_lock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_lock ? ss_real.mutex_lock(m) : 0;
    SS_LOCK_HOOK(t, m, SS_LOCK_MUTEX, ss_real.mutex_trylock(m), ss_real.mutex_lock(m));
}

SS_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_trylock ? ss_real.mutex_trylock(m) : 0;
    SS_TRYLOCK_HOOK(t, m, SS_LOCK_MUTEX, ss_real.mutex_trylock(m));
}

SS_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_timedlock(m, abstime);
    SS_LOCK_HOOK(t, m, SS_LOCK_MUTEX, ss_real.mutex_trylock(m), ss_real.mutex_timedlock(m, abstime));
}

SS_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_clocklock(m, clock, abstime);
    SS_LOCK_HOOK(t, m, SS_LOCK_MUTEX, ss_real.mutex_trylock(m), ss_real.mutex_clocklock(m, clock, abstime));
}

SS_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
    struct ss_thread *t = ss_enter();
    if (SS_UNLIKELY(!t)) return ss_real.mutex_unlock ? ss_real.mutex_unlock(m) : 0;
    SS_UNLOCK_HOOK(t, m, ss_real.mutex_unlock(m));
}

/* ---- condition variables: the mutex is released while waiting and re-acquired before return ---- */

#define SS_COND_HOOK(t, m, wait_call)                                                                        \
    do {                                                                                                    \
        ss_released(t, m);                                                                                  \
        int rc_ = wait_call;                                                                                \
        if (rc_ == 0 || rc_ == ETIMEDOUT || rc_ == EOWNERDEAD) ss_acquired(t, m, SS_LOCK_MUTEX, 0, 0, 0); \
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
