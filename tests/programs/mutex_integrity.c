/* Mutexes that must still be mutexes under the interposer, which locks and releases a private
 * normal mutex with glibc's own steps (preload/lock_steps.h). THREADS threads take five mutexes
 * (one from PTHREAD_MUTEX_INITIALIZER and one of type NORMAL, both of which the steps take; a
 * recursive, an error-checking and an adaptive one, which go to glibc) ROUNDS times each by lock,
 * trylock, timedlock or clocklock,
 * the recursive one sometimes twice over, and now and then wait on a condition variable with the
 * default one (glibc re-locks it inside pthread_cond_timedwait, leaving its word as "waiters",
 * which the next release must handle) while others signal it. Inside, each checks that it is
 * alone and adds one to the mutex's counter (a plain add: a lost update shows at the end). An
 * error-checking mutex must refuse a release by a thread that does not hold it (EPERM). At the end
 * every mutex must be free. Prints, per mutex, "NAME ADDRESS acquisitions N kind K" (every
 * successful lock call and every return from a condition wait, which re-locks; K is glibc's
 * __kind, so that a test knows which kinds it ran), then "violations N"; exits 1
 * if there is any, and dies of SIGALRM after 2 minutes (a broken mutex leaves its waiters blocked).
 *   mutex_integrity [ROUNDS=20000] [THREADS=4] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define LOCKS 5

struct guarded {
    pthread_mutex_t lock;
    long counter;  /* under the lock */
    int inside;    /* atomic */
    uint64_t acquisitions; /* atomic */
    long entered;          /* atomic: what counter must come to */
};

static struct guarded guarded[LOCKS];
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long rounds = 20000;
static int violations; /* atomic */

static void violation(const char *what, int lock) {
    if (__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED) < 10) fprintf(stderr, "mutex %d: %s\n", lock, what);
}

static struct timespec after_ns(clockid_t clock, long ns) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_nsec += ns;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    return ts;
}

/* Takes mutex `g` by call `how`: 1 if it got it. */
static int lock(struct guarded *g, unsigned how) {
    struct timespec ts;
    switch (how % 4) {
    case 0: return pthread_mutex_lock(&g->lock) == 0;
    case 1: return pthread_mutex_trylock(&g->lock) == 0;
    case 2: ts = after_ns(CLOCK_REALTIME, 5000000000L); return pthread_mutex_timedlock(&g->lock, &ts) == 0;
    default: ts = after_ns(CLOCK_MONOTONIC, 5000000000L);
        return pthread_mutex_clocklock(&g->lock, CLOCK_MONOTONIC, &ts) == 0;
    }
}

static void enter(struct guarded *g, int k) {
    if (__atomic_fetch_add(&g->inside, 1, __ATOMIC_ACQ_REL) != 0) violation("two threads inside", k);
    g->counter++;
    __atomic_fetch_add(&g->entered, 1, __ATOMIC_RELAXED);
}

static void leave(struct guarded *g) {
    __atomic_fetch_sub(&g->inside, 1, __ATOMIC_ACQ_REL);
}

static void *worker(void *arg) {
    uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    uint64_t got[LOCKS] = {0};
    for (long i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((x >> 33) % LOCKS);
        struct guarded *g = &guarded[k];
        if (!lock(g, (x >> 24) % 4 == 0 ? (unsigned)(x >> 40) : 0)) continue;
        got[k]++;
        enter(g, k);
        if (k == 2 && (x >> 50) % 8 == 0) { /* the recursive mutex, twice over */
            if (pthread_mutex_lock(&g->lock) != 0) violation("a recursive lock failed", k);
            else {
                got[k]++;
                pthread_mutex_unlock(&g->lock);
            }
        }
        if ((x >> 56) % 64 == 0) sched_yield(); /* let the others find it taken */
        if (k == 0 && (x >> 44) % 128 == 0) {
            /* Wait a little on the condition: released while waiting, re-locked (as "waiters") on return. */
            leave(g);
            struct timespec ts = after_ns(CLOCK_REALTIME, 200000);
            int rc = pthread_cond_timedwait(&cond, &g->lock, &ts);
            if (rc != 0 && rc != ETIMEDOUT) violation("a condition wait failed", k);
            got[k]++;
            enter(g, k);
        } else if (k == 0 && (x >> 44) % 128 == 1) {
            pthread_cond_broadcast(&cond);
        }
        leave(g);
        pthread_mutex_unlock(&g->lock);
        if (k == 3 && (x >> 52) % 32 == 0 && pthread_mutex_unlock(&g->lock) != EPERM)
            violation("an error-checking mutex let a thread release what it does not hold", k);
    }
    for (int k = 0; k < LOCKS; k++) __atomic_fetch_add(&guarded[k].acquisitions, got[k], __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : rounds;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    if (threads < 1 || threads > 64) threads = 4;
    alarm(120);
    static const int types[LOCKS] = {-1, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
                                     PTHREAD_MUTEX_ADAPTIVE_NP};
    pthread_mutex_t initializer = PTHREAD_MUTEX_INITIALIZER;
    guarded[0].lock = initializer;
    for (int k = 1; k < LOCKS; k++) {
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, types[k]);
        pthread_mutex_init(&guarded[k].lock, &attr);
        pthread_mutexattr_destroy(&attr);
    }
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0) return 2;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);

    static const char *names[LOCKS] = {"initializer", "normal", "recursive", "errorcheck", "adaptive"};
    for (int k = 0; k < LOCKS; k++) {
        struct guarded *g = &guarded[k];
        if (pthread_mutex_trylock(&g->lock) != 0) violation("not free at the end", k);
        else {
            g->acquisitions++;
            pthread_mutex_unlock(&g->lock);
        }
        if (g->counter != g->entered) violation("updates under the mutex were lost", k);
        printf("%s %p acquisitions %llu kind %d\n", names[k], (void *)&g->lock, (unsigned long long)g->acquisitions,
               g->lock.__data.__kind);
    }
    printf("violations %d\n", violations);
    return violations ? 1 : 0;
}
