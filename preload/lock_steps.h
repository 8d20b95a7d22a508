/* glibc's own steps on an uncontended lock, taken by the lock hooks instead of a call to glibc.
 *
 * Why: forwarding a call costs a second function and an indirect jump. On an uncontended lock
 * pair that costs glibc about 23 cycles here, the forwarding alone was 2 cycles and the count 3-4
 * more: a read-mostly rwlock program ran 1.3x slower, two threads sharing a mutex 1.2-1.5x
 * (docs/PERFORMANCE.md). So where no thread waits, the hooks change the lock word exactly as
 * glibc's fast path would, with one atomic instruction, and every other state goes to glibc:
 *   - rwlock read lock: in a read phase with no writer (bits 0-2 of __readers clear), a reader
 *     registers by adding 8 (glibc: fetch-add, acquire). No writer holds the lock or waits for
 *     it, so glibc would neither report EDEADLK nor wait; a count that would reach glibc's
 *     overflow bit goes to glibc.
 *   - rwlock release of a read lock in such a phase: take 8 off (glibc: compare-and-swap,
 *     release). With no writer waiting glibc hands over nothing and wakes nobody.
 *   - a private normal mutex (from PTHREAD_MUTEX_INITIALIZER or of type NORMAL or DEFAULT): lock
 *     by 0 -> 1 on __lock, then __owner = the thread's id and one more __nusers, as glibc;
 *     release by __owner = 0, one less __nusers and an exchange of __lock with 0, waking one
 *     waiter with FUTEX_WAKE if the word was 2, as glibc (which, in a process of one thread,
 *     writes the word plainly instead: the same state). Any other kind (recursive,
 *     error-checking, adaptive, robust, priority, process-shared, elided) goes to glibc, by the
 *     hooks' forwarding fast part.
 * A read step whose compare-and-swap fails (another thread changed the word) goes to glibc too;
 * a mutex step whose compare-and-swap fails goes on with glibc's next steps (ss_mutex_grab_step,
 * ss_mutex_sleep_step: its __lll_lock_wait), taken by the hook at once, so that the contended
 * hand-over is glibc's (benches/faithfulness.sh; docs/PERFORMANCE.md, "Faithfulness").
 *
 * Taken only after a check at start (lock_steps.c) has seen glibc's own functions be the C
 * library's (not another interposer's, which the steps would go around) and make exactly these
 * changes on locks of our own; else, and with STALLSCOPE_LOCK_STEPS=0, every call is forwarded.
 * The PROCESS record says which are taken (flags RWLOCK_STEPS, MUTEX_STEPS). What is given up:
 * glibc's static probes (mutex_entry, rdlock_entry and the like) do not fire for these calls, glibc's assertion
 * that a free mutex has no owner (which catches some memory corruption) is not made, and such a
 * pair costs a little less than glibc's own (it skips glibc's checks for the other cases:
 * the profile shows these locks slightly cheaper than they are, by about 2 ns a pair). */
#ifndef SS_LOCK_STEPS_H
#define SS_LOCK_STEPS_H

#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define SS_RWLOCK_READER 8u               /* one reader in __readers (glibc's READER_SHIFT is 3) */
#define SS_RWLOCK_STATE_BITS 7u           /* write phase, writer locked, readers waiting */
#define SS_RWLOCK_READERS_MAX 0x7ffffff8u /* below glibc's overflow bit (1 << 31) after one more */
/* __kind of a private normal mutex: 0 (PTHREAD_MUTEX_INITIALIZER, init without attributes), or
 * PTHREAD_MUTEX_NO_ELISION_NP (512) for one whose type was set to NORMAL or DEFAULT, which glibc
 * treats alike (its type mask leaves bit 512 out, and such a mutex is never elided). */
#define SS_MUTEX_NORMAL_KIND 0
#define SS_MUTEX_NO_ELISION 512

/* Whether the mutex steps apply to `m`: a private normal mutex. */
static inline int ss_mutex_steppable(const pthread_mutex_t *m) {
    return (m->__data.__kind & ~SS_MUTEX_NO_ELISION) == SS_MUTEX_NORMAL_KIND;
}

/* Registers a reader if the lock is in a read phase with no writer: 1 if done. */
static inline int ss_rwlock_read_step(pthread_rwlock_t *l) {
    unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
    return __builtin_expect((r & SS_RWLOCK_STATE_BITS) == 0, 1) && __builtin_expect(r < SS_RWLOCK_READERS_MAX, 1) &&
           __atomic_compare_exchange_n(&l->__data.__readers, &r, r + SS_RWLOCK_READER, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* Unregisters a reader if the lock is in a read phase with readers and no writer: 1 if done. */
static inline int ss_rwlock_unread_step(pthread_rwlock_t *l) {
    unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
    return __builtin_expect((r & SS_RWLOCK_STATE_BITS) == 0, 1) && __builtin_expect(r >= SS_RWLOCK_READER, 1) &&
           __atomic_compare_exchange_n(&l->__data.__readers, &r, r - SS_RWLOCK_READER, 0, __ATOMIC_RELEASE,
                                       __ATOMIC_RELAXED);
}

/* What glibc's lock does once it has the word: the owner and one more user. */
static inline void ss_mutex_owned_step(pthread_mutex_t *m, uint32_t tid) {
    m->__data.__owner = (int)tid;
    m->__data.__nusers++;
}

/* Locks a free steppable mutex for thread `tid` (the kernel's id, as glibc records it): 1 if done.
 * A tid of 0 is a thread record wiped in a child that fork's handler did not reach (_Fork, raw
 * clone): left to glibc, which knows the id. */
static inline int ss_mutex_lock_step(pthread_mutex_t *m, uint32_t tid) {
    int free_word = 0;
    if (__builtin_expect(tid == 0, 0) ||
        !__atomic_compare_exchange_n(&m->__data.__lock, &free_word, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    ss_mutex_owned_step(m, tid);
    return 1;
}

/* glibc's next step after a failed lock step on a private normal mutex (the start of its
 * __lll_lock_wait, which its lock calls at once when its own compare-and-swap fails): a word of 2
 * (waiters) is left alone, any other is exchanged with 2, which takes a lock released meanwhile
 * (leaving 2, as glibc does: its holder's release then wakes one, perhaps nobody). 1 if that took
 * the lock; 0 if the thread is to sleep (ss_mutex_sleep_step). The caller then records the owner
 * as ss_mutex_owned_step does. */
static inline int ss_mutex_grab_step(pthread_mutex_t *m) {
    int *w = &m->__data.__lock;
    return __atomic_load_n(w, __ATOMIC_RELAXED) != 2 && __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) == 0;
}

/* The rest of glibc's __lll_lock_wait: sleep while the word is 2 (FUTEX_WAIT_PRIVATE), exchange it
 * with 2 on waking, until the exchange finds it 0 (taken). Its futex_wait returns on a wake, a
 * word that was no longer 2 (EAGAIN) or a signal (EINTR), and each is followed by the exchange.
 * Inline: the sleeping thread's pc is in the hook's slow part (ss_futex_quiet). */
static inline void ss_mutex_sleep_step(pthread_mutex_t *m) {
    int *w = &m->__data.__lock;
    do (void)ss_futex_quiet(w, FUTEX_WAIT_PRIVATE, 2);
    while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0);
}

/* Wakes one waiter of the word (FUTEX_WAKE_PRIVATE): how many it woke (0 or 1), or -errno. */
long ss_futex_wake_one(int *word);

/* The release of a steppable mutex up to its wake: 1 if the word was 2 (waiters), when glibc's
 * release wakes one at once (ss_futex_wake_one). */
static inline int ss_mutex_unlock_step_begin(pthread_mutex_t *m) {
    m->__data.__owner = 0;
    m->__data.__nusers--;
    return __builtin_expect(__atomic_exchange_n(&m->__data.__lock, 0, __ATOMIC_RELEASE) > 1, 0);
}

/* Releases a steppable mutex. */
static inline void ss_mutex_unlock_step(pthread_mutex_t *m) {
    if (ss_mutex_unlock_step_begin(m)) ss_futex_wake_one(&m->__data.__lock);
}

/* Decides at start which steps the hooks take (ss_config.rwlock_steps, ss_config.mutex_steps). */
void ss_lock_steps_init(void);

#pragma GCC visibility pop
#endif
