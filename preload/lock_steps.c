/* The check at start that decides whether the lock hooks take glibc's own steps (lock_steps.h). */
#include "ss_internal.h"

#include "lock_steps.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's wake of one waiter of a private lock word (its __lll_lock_wake_private): a bare system
 * call as glibc's, not through the syscall() hook. */
long ss_futex_wake_one(int *word) { return ss_futex_quiet(word, FUTEX_WAKE_PRIVATE, 1); }

/* glibc's rwlock changes __readers as the read steps assume, takes back a reader the steps
 * registered, and the steps refuse a lock a writer holds (and the write phase it leaves). */
static int ss_rwlock_steps_work(void) {
    if (!ss_in_libc((void *)ss_real.rwlock_rdlock) || !ss_in_libc((void *)ss_real.rwlock_unlock) ||
        !ss_in_libc((void *)ss_real.rwlock_wrlock) || !ss_in_libc((void *)ss_real.rwlock_tryrdlock))
        return 0;
    pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
    const unsigned *w = &lock.__data.__readers;
    if (ss_real.rwlock_rdlock(&lock) != 0 || *w != SS_RWLOCK_READER) return 0; /* glibc registers a reader */
    if (!ss_rwlock_read_step(&lock) || *w != 2 * SS_RWLOCK_READER) return 0;
    if (ss_real.rwlock_unlock(&lock) != 0 || *w != SS_RWLOCK_READER) return 0; /* and unregisters ours */
    if (!ss_rwlock_unread_step(&lock) || *w != 0) return 0;
    if (ss_real.rwlock_wrlock(&lock) != 0 || (*w & 3u) == 0) return 0; /* a writer shows in bits 0-1 */
    if (ss_rwlock_read_step(&lock) || ss_rwlock_unread_step(&lock)) return 0;
    if (ss_real.rwlock_tryrdlock(&lock) == 0) return 0;
    if (ss_real.rwlock_unlock(&lock) != 0 || ss_rwlock_read_step(&lock)) return 0; /* still a write phase */
    if (ss_real.rwlock_rdlock(&lock) != 0 || *w != SS_RWLOCK_READER) return 0; /* glibc starts a read phase */
    if (!ss_rwlock_unread_step(&lock) || *w != 0) return 0;
    return 1;
}

/* On mutex `m`, of a steppable kind: glibc locks it as the steps do (lock word 1, owner the
 * thread's id, one user, the kind unchanged: no elision forced on it), releases it after a step,
 * and a step releases it after glibc, leaving every field as glibc's release does. */
static int ss_mutex_steps_work_on(pthread_mutex_t *m, uint32_t tid) {
    struct __pthread_mutex_s *d = &m->__data;
    int kind = d->__kind;
#define SS_MUTEX_IS(lock_word, owner, users)                                                               \
    (d->__lock == (lock_word) && d->__owner == (owner) && d->__nusers == (users) && d->__kind == kind)
    if (!ss_mutex_steppable(m)) return 0;
    if (ss_real.mutex_lock(m) != 0 || !SS_MUTEX_IS(1, (int)tid, 1u)) return 0;
    ss_mutex_unlock_step(m);
    if (!SS_MUTEX_IS(0, 0, 0u)) return 0;
    if (!ss_mutex_lock_step(m, tid) || !SS_MUTEX_IS(1, (int)tid, 1u)) return 0;
    if (ss_mutex_lock_step(m, tid) || ss_real.mutex_trylock(m) != EBUSY) return 0; /* taken is taken */
    if (ss_real.mutex_unlock(m) != 0 || !SS_MUTEX_IS(0, 0, 0u)) return 0;
    if (ss_real.mutex_trylock(m) != 0 || !SS_MUTEX_IS(1, (int)tid, 1u)) return 0;
    ss_mutex_unlock_step(m);
    if (!SS_MUTEX_IS(0, 0, 0u)) return 0;
    /* the contended steps: a held lock is marked as having waiters (2) and not taken, glibc's
     * release clears that; a free one is taken with 2, which glibc's release and the step's
     * clear alike */
    if (ss_real.mutex_lock(m) != 0 || ss_mutex_grab_step(m) || !SS_MUTEX_IS(2, (int)tid, 1u)) return 0;
    if (ss_mutex_grab_step(m) || ss_real.mutex_trylock(m) != EBUSY || !SS_MUTEX_IS(2, (int)tid, 1u)) return 0;
    if (ss_real.mutex_unlock(m) != 0 || !SS_MUTEX_IS(0, 0, 0u)) return 0;
    if (!ss_mutex_grab_step(m) || d->__lock != 2) return 0;
    ss_mutex_owned_step(m, tid);
    if (ss_real.mutex_trylock(m) != EBUSY || ss_real.mutex_unlock(m) != 0 || !SS_MUTEX_IS(0, 0, 0u)) return 0;
    if (!ss_mutex_grab_step(m)) return 0;
    ss_mutex_owned_step(m, tid);
    ss_mutex_unlock_step(m);
    return SS_MUTEX_IS(0, 0, 0u);
#undef SS_MUTEX_IS
}

/* The mutexes the steps take are glibc's private normal ones: the initializer's and one whose
 * type was set to NORMAL (which glibc marks "no elision"); a recursive one is not taken. */
static int ss_mutex_steps_work(void) {
    if (!ss_in_libc((void *)ss_real.mutex_lock) || !ss_in_libc((void *)ss_real.mutex_unlock) ||
        !ss_in_libc((void *)ss_real.mutex_trylock))
        return 0;
    int (*init)(pthread_mutex_t *, const pthread_mutexattr_t *) = NULL;
    *(void **)&init = dlsym(RTLD_NEXT, "pthread_mutex_init"); /* glibc's: ours records an init site */
    if (!ss_in_libc((void *)init)) return 0;
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER, normal, recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_mutexattr_t attr;
    if (pthread_mutexattr_init(&attr) != 0) return 0;
    int ok = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_NORMAL) == 0 && init(&normal, &attr) == 0;
    pthread_mutexattr_destroy(&attr);
    return ok && ss_mutex_steps_work_on(&plain, tid) && ss_mutex_steps_work_on(&normal, tid) &&
           !ss_mutex_steppable(&recursive);
}

void ss_lock_steps_init(void) {
    if (!ss_option_num(SS_OPT_LOCK_STEPS)) return; /* 0: forward every call (comparisons) */
    ss_config.rwlock_steps = ss_rwlock_steps_work();
    ss_config.mutex_steps = ss_mutex_steps_work();
}
