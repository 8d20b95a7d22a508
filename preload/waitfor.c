/* Wait-for edges (docs/WAITFOR.md): for each blocking wait, the thread at its other end.
 *
 * - A lock wait: the owner of the lock when the wait began. glibc keeps a pthread mutex's owner
 *   tid in __data.__owner (for robust and priority-inheriting mutexes in the lock word itself)
 *   and a read-write lock's writer in __data.__cur_writer; one load, on the slow path only.
 * - A condition or semaphore wait: the thread that woke it. The wakers (pthread_cond_signal,
 *   pthread_cond_broadcast, sem_post) stamp a slot hashed by the object's address with their tid
 *   and a sequence number, but only when the object has waiters (the same test glibc makes), so
 *   a signal nobody waits for costs one load. A waiter reads the slot's stamp before it blocks
 *   and after: a new stamp names its waker.
 * - A join: the joined thread.
 *
 * Each wait goes into a ring owned by the waiting thread (one producer, the thread; one consumer,
 * the flush), as a WAITS record. Nothing here allocates, locks or calls stdio; everything runs only
 * on paths that block anyway. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <semaphore.h>
#include <time.h>

/* ---- the ring ----
 * Every entry is timed in ticks (ss_ticks: an rdtsc, not a clock_gettime, around the wait) and
 * marked so in its kind; the flush makes its times CLOCK_MONOTONIC before it writes it
 * (ss_waits_to_mono), once: the mark is cleared then and never reaches a file. */
#define SS_WAIT_IN_TICKS 0x80u

static void ss_wait_push(struct ss_thread *t, const struct ss_wait *w) {
    /* a condition wait before this one, not recorded yet: first, so that the ring stays in order */
    if (SS_UNLIKELY(t->locks.pending_cond != 0)) ss_cond_wait_record(t);
    if (!t->waits.ring) return;
    uint32_t h = t->waits.head, tail = __atomic_load_n(&t->waits.tail, __ATOMIC_ACQUIRE);
    if (h - tail >= SS_WAIT_RING) {
        SS_ADD(t->waits.dropped, 1);
        return;
    }
    t->waits.ring[h & (SS_WAIT_RING - 1)] = *w;
    __atomic_store_n(&t->waits.head, h + 1, __ATOMIC_RELEASE);
    if (SS_UNLIKELY(h + 1 - tail >= SS_WAIT_RING_EARLY) && !__atomic_load_n(&ss_flush_requested, __ATOMIC_RELAXED))
        __atomic_store_n(&ss_flush_requested, 1, __ATOMIC_RELAXED);
}

/* A run of parallel regions (omp.c), pushed on the wait ring for the timeline: not a wait. */
void ss_wait_region(struct ss_thread *t, const struct ss_omp_run *run) {
    uint64_t idle = run->team_ticks > run->body_ticks ? run->team_ticks - run->body_ticks : 0;
    uint64_t share = run->team_ticks ? idle * 10000 / run->team_ticks : 0;
    struct ss_wait w = {run->start_ticks, run->end_ticks, run->body, run->count, SS_WAIT_REGION | SS_WAIT_IN_TICKS,
                        run->kind, (uint16_t)(share > 10000 ? 10000 : share)};
    ss_wait_push(t, &w);
}

/* Makes the times of the waits in [tail, head) that are in ticks CLOCK_MONOTONIC, in place: the
 * flush owns those slots until it moves the tail past them. */
static void ss_waits_to_mono(struct ss_thread *t, uint32_t tail, uint32_t head) {
    struct ss_tick_clock clock;
    int have_clock = 0;
    for (uint32_t i = tail; i != head; i++) {
        struct ss_wait *w = &t->waits.ring[i & (SS_WAIT_RING - 1)];
        if (!(w->kind & SS_WAIT_IN_TICKS)) continue;
        if (!have_clock) {
            ss_tick_clock_now(&clock);
            have_clock = 1;
        }
        w->start_mono_ns = ss_tick_clock_mono(&clock, w->start_mono_ns);
        w->end_mono_ns = ss_tick_clock_mono(&clock, w->end_mono_ns);
        w->kind &= (uint8_t)~SS_WAIT_IN_TICKS;
    }
}

/* Appends the thread's waits to `out` as one WAITS record under `serial` and empties its ring
 * (flushes run one at a time). Returns the waits written, or -1 when out of memory. */
int ss_waits_write(struct ss_buf *out, uint32_t serial, struct ss_thread *t) {
    if (!t->waits.ring) return 0;
    uint32_t h = __atomic_load_n(&t->waits.head, __ATOMIC_ACQUIRE), tail = t->waits.tail;
    uint64_t dropped = SS_LOAD(t->waits.dropped), new_dropped = dropped - t->waits.reported;
    if (h == tail && new_dropped == 0) return 0;
    ss_waits_to_mono(t, tail, h);
    uint32_t n = h - tail, first = tail & (SS_WAIT_RING - 1);
    uint32_t run = n < SS_WAIT_RING - first ? n : SS_WAIT_RING - first;
    struct ss_waits_record r = {serial, n, new_dropped};
    if (out == &ss_fold_out && out->len + n * sizeof(struct ss_wait) + 64 > SS_FOLD_OUT_MAX) {
        /* bounded between flushes: the folded threads' waits are lost, and counted */
        t->waits.reported = dropped;
        __atomic_store_n(&t->waits.tail, h, __ATOMIC_RELEASE);
        return 0;
    }
    if (ss_buf_record3(out, SS_REC_WAITS, &r, sizeof r, &t->waits.ring[first], run * sizeof(struct ss_wait),
                       t->waits.ring, (n - run) * sizeof(struct ss_wait)) != 0)
        return -1;
    t->waits.reported = dropped;
    __atomic_store_n(&t->waits.tail, h, __ATOMIC_RELEASE);
    return (int)n;
}

/* The wait-for part of a node, for a new thread (ss_thread_reset, threads.c): its ring, in the
 * node's mapping after the sample rings, empty. */
void ss_waitfor_thread_reset(struct ss_thread *t) {
    struct ss_sample *rings = ss_node_rings(t);
    t->waits.ring = rings ? (struct ss_wait *)(rings + SS_CPU_RING + SS_WALL_RING) : NULL;
    t->waits.head = t->waits.tail = 0;
    t->waits.dropped = t->waits.reported = 0;
    t->waits.blocked_since = t->waits.ended_ticks = t->waits.last_end = 0;
}

/* ---- lock waits ---- */

static inline void ss_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The owner of a lock that looked taken, or 0. A mutex's __owner is stored just after its lock
 * word is won and cleared just before it is released: a waiter that looks in that window sees 0,
 * so it looks once more after a short pause. */
uint32_t ss_wait_owner(const void *lock, uint32_t kind) {
    if (kind == SS_LOCK_MUTEX) {
        pthread_mutex_t *m = (pthread_mutex_t *)lock;
        for (int i = 0; i < 3; i++) {
            int owner = __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
            if (owner > 0) return (uint32_t)owner;
            /* robust and priority-inheriting mutexes: the lock word is the owner's tid */
            int word = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) & 0x3fffffff;
            if (word > 2) return (uint32_t)word;
            ss_pause();
            ss_pause();
        }
        return 0;
    }
    if (kind == SS_LOCK_RWLOCK_READ || kind == SS_LOCK_RWLOCK_WRITE) {
        int writer = __atomic_load_n(&((pthread_rwlock_t *)lock)->__data.__cur_writer, __ATOMIC_RELAXED);
        return writer > 0 ? (uint32_t)writer : 0;
    }
    return 0; /* a spin lock keeps no owner */
}

void ss_wait_lock(struct ss_thread *t, const void *lock, uint32_t kind, uint32_t owner, uint64_t start_ticks,
                  uint64_t end_ticks, uint16_t woken_us) {
    struct ss_wait w = {start_ticks, end_ticks, (uintptr_t)lock, owner, SS_WAIT_LOCK | SS_WAIT_IN_TICKS, (uint8_t)kind,
                        woken_us};
    ss_wait_push(t, &w);
}

/* ---- wakers ---- */

#define SS_WAKER_SLOTS 1024u

/* A slot: the object last woken through it, the stamp (sequence << 32 | SS_STAMP_BROADCAST when
 * it was a broadcast | the waker's tid: tids stay below 2^22, pid_max's limit), and when the wake
 * began (ticks, read before the wake call; 0: not known), written before the stamp. */
struct ss_waker_slot {
    uint64_t object;
    uint64_t stamp;
    uint64_t wake_ticks;
};

static struct ss_waker_slot ss_wakers[SS_WAKER_SLOTS];

static inline struct ss_waker_slot *ss_waker_slot(const void *object) {
    uint64_t a = (uint64_t)(uintptr_t)object;
    return &ss_wakers[((a >> 3) * 0x9E3779B97F4A7C15ull) >> 54];
}

#define SS_STAMP_BROADCAST 0x80000000u

SS_NOINLINE void ss_note_waker(const void *object, uint32_t tid, int broadcast, uint64_t wake_ticks) {
    struct ss_waker_slot *s = ss_waker_slot(object);
    uint64_t seq = (SS_LOAD(s->stamp) >> 32) + 1;
    SS_STORE(s->object, (uint64_t)(uintptr_t)object);
    SS_STORE(s->wake_ticks, wake_ticks);
    __atomic_store_n(&s->stamp, seq << 32 | (broadcast ? SS_STAMP_BROADCAST : 0) | (tid & ~SS_STAMP_BROADCAST),
                     __ATOMIC_RELEASE);
}

uint64_t ss_wait_cond_begin(const void *cond) {
    return __atomic_load_n(&ss_waker_slot(cond)->stamp, __ATOMIC_ACQUIRE);
}

/* The stamp of the notification that woke a wait on `object` whose slot read `stamp` before it,
 * or 0. */
uint64_t ss_waker_of(const void *object, uint64_t stamp) {
    struct ss_waker_slot *s = ss_waker_slot(object);
    uint64_t now = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
    if (now >> 32 == stamp >> 32 || SS_LOAD(s->object) != (uint64_t)(uintptr_t)object) return 0;
    return now;
}

/* The wait's `notification` (ss_format.h): the waker's sequence number modulo SS_NOTIFY_SEQ_MASK,
 * from 1, and SS_NOTIFY_BROADCAST; 0 when the waker is not known. */
static uint16_t ss_notification(uint64_t now) {
    if (!now) return 0;
    uint16_t seq = (uint16_t)(((now >> 32) - 1) % SS_NOTIFY_SEQ_MASK + 1);
    return (uint16_t)(seq | ((uint32_t)now & SS_STAMP_BROADCAST ? SS_NOTIFY_BROADCAST : 0));
}

/* A wait woken by a notification whose stamp (ss_waker_of) is `now`. */
static void ss_wait_woken(struct ss_thread *t, uint32_t kind, const void *object, uint64_t now,
                          uint64_t start_ticks, uint64_t end_ticks, uint16_t flags) {
    struct ss_wait w = {start_ticks, end_ticks, (uintptr_t)object, (uint32_t)now & ~SS_STAMP_BROADCAST,
                        (uint8_t)(kind | SS_WAIT_IN_TICKS), 0, (uint16_t)(ss_notification(now) | flags)};
    ss_wait_push(t, &w);
}

void ss_wait_cond_end(struct ss_thread *t, const void *cond, uint64_t waker, uint64_t start_ticks,
                      uint64_t end_ticks, int rewait) {
    ss_wait_woken(t, SS_WAIT_CONDITION, cond, waker, start_ticks, end_ticks, rewait ? SS_NOTIFY_REWAIT : 0);
}

/* Microseconds from `at` to `end_ticks`, 1 to SS_WOKEN_US_MAX. */
static uint16_t ss_us_between(uint64_t at, uint64_t end_ticks) {
    uint64_t us = ss_ticks_to_ns(end_ticks - at) / 1000u;
    return (uint16_t)(us < 1 ? 1 : us > SS_WOKEN_US_MAX ? SS_WOKEN_US_MAX : us);
}

/* How long before `end_ticks` the wake whose stamp is `now` began, in microseconds (1 to
 * SS_WOKEN_US_MAX), or 0 when not known: the slot moved on meanwhile, the waker did not say, or
 * the two CPUs' clocks disagree. */
static uint16_t ss_woken_us_before(const void *object, uint64_t now, uint64_t end_ticks) {
    struct ss_waker_slot *s = ss_waker_slot(object);
    uint64_t at = SS_LOAD(s->wake_ticks);
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the ticks read, then the stamp checked unchanged */
    if (!now || !at || at > end_ticks || SS_LOAD(s->stamp) != now) return 0;
    return ss_us_between(at, end_ticks);
}

/* While the thread holds the mutex nobody else releases it, so the last release noted within the
 * wait is the one that woke this thread (a release that woke nobody notes nothing). A wake that
 * began before the wait is not this wait's, nor one after its end (the mutex released by this
 * thread and released again by another before this read): both left unknown. */
uint16_t ss_lock_woken_us(const void *lock, uint64_t start_ticks, uint64_t end_ticks) {
    struct ss_waker_slot *s = ss_waker_slot(lock);
    /* In the reverse order of the note's stores: ticks seen new come with their object. */
    uint64_t stamp = __atomic_load_n(&s->stamp, __ATOMIC_ACQUIRE);
    uint64_t at = __atomic_load_n(&s->wake_ticks, __ATOMIC_ACQUIRE);
    uint64_t object = __atomic_load_n(&s->object, __ATOMIC_ACQUIRE);
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the fields read, then the stamp checked unchanged */
    if (stamp == 0 || object != (uint64_t)(uintptr_t)lock || at < start_ticks || at > end_ticks ||
        SS_LOAD(s->stamp) != stamp)
        return 0;
    return ss_us_between(at, end_ticks);
}

/* A futex wait (futex.c): woken by a FUTEX_WAKE on its word, the waker is named, with how long
 * before the wait's end its wake began (the wait's tail after the release: the waiter's wake-up,
 * when the waker already does something else); a wait that returned otherwise (a timeout, a value
 * that had changed, a signal) names none. */
void ss_wait_futex_end(struct ss_thread *t, const void *word, uint64_t stamp, uint64_t start_ticks,
                       uint64_t end_ticks, int woken) {
    uint64_t now = woken ? ss_waker_of(word, stamp) : 0;
    struct ss_wait w = {start_ticks, end_ticks, (uintptr_t)word, (uint32_t)now & ~SS_STAMP_BROADCAST,
                        SS_WAIT_FUTEX | SS_WAIT_IN_TICKS, SS_LOCK_FUTEX, ss_woken_us_before(word, now, end_ticks)};
    ss_wait_push(t, &w);
}

/* The real wakers and waits not in struct ss_real (resolved on first use). */
static int (*ss_real_cond_signal)(pthread_cond_t *);
static int (*ss_real_cond_broadcast)(pthread_cond_t *);
static int (*ss_real_sem_post)(sem_t *);
static int (*ss_real_sem_wait)(sem_t *);
static int (*ss_real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*ss_real_join)(pthread_t, void **);

static void *ss_lookup(const char *name, const char *version) {
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    return p ? p : dlsym(RTLD_NEXT, name);
}

#define SS_REAL(var, name, version)                                                                          \
    do {                                                                                                    \
        if (SS_UNLIKELY(!var)) __atomic_store_n((void **)&var, ss_lookup(name, version), __ATOMIC_RELEASE);  \
    } while (0)

/* glibc 2.25 and later: __wrefs counts the waiters from bit 3. */
static inline int ss_cond_has_waiters(pthread_cond_t *c) {
    return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
}

SS_EXPORT int pthread_cond_signal(pthread_cond_t *c) {
    SS_REAL(ss_real_cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
    struct ss_thread *t = ss_self_known();
    if (t && ss_cond_has_waiters(c)) ss_note_waker(c, t->rec.tid, 0, 0);
    return ss_real_cond_signal(c);
}

SS_EXPORT int pthread_cond_broadcast(pthread_cond_t *c) {
    SS_REAL(ss_real_cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
    struct ss_thread *t = ss_self_known();
    if (t && ss_cond_has_waiters(c)) ss_note_waker(c, t->rec.tid, 1, 0);
    return ss_real_cond_broadcast(c);
}

/* glibc's struct new_sem on 64-bit: the value in the low 32 bits of its first word, the number
 * of waiters in the high 32 bits. */
static inline uint64_t ss_sem_word(sem_t *s) {
    return __atomic_load_n((uint64_t *)(void *)s, __ATOMIC_RELAXED);
}

SS_EXPORT int sem_post(sem_t *s) {
    SS_REAL(ss_real_sem_post, "sem_post", NULL);
    struct ss_thread *t = ss_self_known();
    if (t && sizeof(void *) == 8 && (ss_sem_word(s) >> 32) != 0) ss_note_waker(s, t->rec.tid, 0, 0);
    return ss_real_sem_post(s);
}

static SS_NOINLINE int ss_sem_wait_slow(struct ss_thread *t, sem_t *s, const struct timespec *abstime) {
    uint64_t stamp = ss_wait_cond_begin(s), start = ss_ticks();
    ss_wait_enter(t, start);
    int rc = abstime ? ss_real_sem_timedwait(s, abstime) : ss_real_sem_wait(s);
    uint64_t end = ss_ticks();
    ss_wait_leave(t, start, end);
    if (rc == 0) ss_wait_woken(t, SS_WAIT_SEMAPHORE, s, ss_waker_of(s, stamp), start, end, 0);
    return rc;
}

/* A semaphore whose value is above 0 does not block: forwarded. */
SS_EXPORT int sem_wait(sem_t *s) {
    SS_REAL(ss_real_sem_wait, "sem_wait", NULL);
    SS_REAL(ss_real_sem_timedwait, "sem_timedwait", NULL);
    struct ss_thread *t = ss_self_known();
    if (!t || sizeof(void *) != 8 || (uint32_t)ss_sem_word(s) != 0) return ss_real_sem_wait(s);
    return ss_sem_wait_slow(t, s, NULL);
}

SS_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime) {
    SS_REAL(ss_real_sem_wait, "sem_wait", NULL);
    SS_REAL(ss_real_sem_timedwait, "sem_timedwait", NULL);
    struct ss_thread *t = ss_self_known();
    if (!t || sizeof(void *) != 8 || (uint32_t)ss_sem_word(s) != 0) return ss_real_sem_timedwait(s, abstime);
    return ss_sem_wait_slow(t, s, abstime);
}

/* The tid of the live (or ended, not yet reused) thread `th`, or 0. Joins are rare: a walk of
 * the thread list. */
static uint32_t ss_tid_of(pthread_t th) {
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next) {
        uint32_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
        if ((st == SS_NODE_LIVE || st == SS_NODE_ENDED) && t->pthread_id == (uintptr_t)th) return t->rec.tid;
    }
    return 0;
}

SS_EXPORT int pthread_join(pthread_t th, void **ret) {
    SS_REAL(ss_real_join, "pthread_join", NULL);
    struct ss_thread *t = ss_self_known();
    if (!t) return ss_real_join(th, ret);
    uint32_t tid = ss_tid_of(th);
    uint64_t start = ss_ticks();
    ss_wait_enter(t, start);
    int rc = ss_real_join(th, ret);
    uint64_t end = ss_ticks();
    ss_wait_leave(t, start, end);
    if (rc == 0 && tid == 0) tid = ss_tid_of(th); /* it had not started yet: its node is there now */
    if (rc == 0) {
        struct ss_wait w = {start, end, 0, tid, SS_WAIT_JOIN | SS_WAIT_IN_TICKS, 0, 0};
        ss_wait_push(t, &w);
    }
    return rc;
}

/* ---- naming heap locks: the stack of their initialisation ---- */

static int (*ss_real_mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
static int (*ss_real_rwlock_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);

SS_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr) {
    SS_REAL(ss_real_mutex_init, "pthread_mutex_init", NULL);
    struct ss_thread *t = ss_self_known();
    int rc = ss_real_mutex_init(m, attr);
    if (t && rc == 0) ss_lock_init_stack(t, m, SS_LOCK_MUTEX);
    return rc;
}

SS_EXPORT int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *attr) {
    SS_REAL(ss_real_rwlock_init, "pthread_rwlock_init", NULL);
    struct ss_thread *t = ss_self_known();
    int rc = ss_real_rwlock_init(l, attr);
    if (t && rc == 0) ss_lock_init_stack(t, l, SS_LOCK_RWLOCK_WRITE);
    return rc;
}

/* Resolves the real functions at start-up, so that a waker called from a signal handler (sem_post
 * is async-signal-safe) never calls dlsym. */
void ss_waitfor_init(void) {
    SS_REAL(ss_real_cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
    SS_REAL(ss_real_cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
    SS_REAL(ss_real_sem_post, "sem_post", NULL);
    SS_REAL(ss_real_sem_wait, "sem_wait", NULL);
    SS_REAL(ss_real_sem_timedwait, "sem_timedwait", NULL);
    SS_REAL(ss_real_join, "pthread_join", NULL);
    SS_REAL(ss_real_mutex_init, "pthread_mutex_init", NULL);
    SS_REAL(ss_real_rwlock_init, "pthread_rwlock_init", NULL);
}
