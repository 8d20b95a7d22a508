/* The control for benches/faithfulness.sh: an LD_PRELOAD library whose lock functions only call
 * glibc's (the mutex, condition variable and read-write lock calls the faithfulness programs
 * make). What interposing at all changes in a program's hand-offs and futex calls: one more call
 * and return around each operation, nothing recorded. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>

static int (*real_lock)(pthread_mutex_t *), (*real_trylock)(pthread_mutex_t *), (*real_unlock)(pthread_mutex_t *);
static int (*real_wait)(pthread_cond_t *, pthread_mutex_t *), (*real_signal)(pthread_cond_t *),
    (*real_broadcast)(pthread_cond_t *);
static int (*real_rdlock)(pthread_rwlock_t *), (*real_wrlock)(pthread_rwlock_t *), (*real_tryrdlock)(pthread_rwlock_t *),
    (*real_trywrlock)(pthread_rwlock_t *), (*real_rwunlock)(pthread_rwlock_t *);

static void *real(const char *name, const char *version) {
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    return p ? p : dlsym(RTLD_NEXT, name);
}

__attribute__((constructor)) static void init(void) {
    *(void **)&real_lock = real("pthread_mutex_lock", NULL);
    *(void **)&real_trylock = real("pthread_mutex_trylock", NULL);
    *(void **)&real_unlock = real("pthread_mutex_unlock", NULL);
    *(void **)&real_wait = real("pthread_cond_wait", "GLIBC_2.3.2");
    *(void **)&real_signal = real("pthread_cond_signal", "GLIBC_2.3.2");
    *(void **)&real_broadcast = real("pthread_cond_broadcast", "GLIBC_2.3.2");
    *(void **)&real_rdlock = real("pthread_rwlock_rdlock", NULL);
    *(void **)&real_wrlock = real("pthread_rwlock_wrlock", NULL);
    *(void **)&real_tryrdlock = real("pthread_rwlock_tryrdlock", NULL);
    *(void **)&real_trywrlock = real("pthread_rwlock_trywrlock", NULL);
    *(void **)&real_rwunlock = real("pthread_rwlock_unlock", NULL);
}

int pthread_mutex_lock(pthread_mutex_t *m) { return real_lock(m); }
int pthread_mutex_trylock(pthread_mutex_t *m) { return real_trylock(m); }
int pthread_mutex_unlock(pthread_mutex_t *m) { return real_unlock(m); }
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return real_wait(c, m); }
int pthread_cond_signal(pthread_cond_t *c) { return real_signal(c); }
int pthread_cond_broadcast(pthread_cond_t *c) { return real_broadcast(c); }
int pthread_rwlock_rdlock(pthread_rwlock_t *l) { return real_rdlock(l); }
int pthread_rwlock_wrlock(pthread_rwlock_t *l) { return real_wrlock(l); }
int pthread_rwlock_tryrdlock(pthread_rwlock_t *l) { return real_tryrdlock(l); }
int pthread_rwlock_trywrlock(pthread_rwlock_t *l) { return real_trywrlock(l); }
int pthread_rwlock_unlock(pthread_rwlock_t *l) { return real_rwunlock(l); }
