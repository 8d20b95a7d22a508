/* Read-write locks that must still be locks under the interposer, which does glibc's
 * uncontended read step itself (preload/locks.c). THREADS threads take three locks (default
 * attributes; writers preferred, non-recursive; process-shared) ROUNDS times each, for reading or
 * writing, by every call (rdlock, tryrdlock, timedrdlock, clockrdlock and the write ones), a
 * read sometimes twice over (the default lock only: the non-recursive one may deadlock on it).
 * Inside, each checks what the lock promises: a writer is alone (no reader, no other writer) and
 * leaves the pair (a, b) with a + b == 0, which every reader must see; a thread holding a write
 * lock gets EDEADLK for a read lock. At the end every lock must be free (a try for writing
 * succeeds). Prints, per lock, "LOCK ADDRESS reads R writes W" with the successful acquisitions
 * of each kind (recursive ones included), then "violations N"; exits 1 if there is any (and
 * dies of SIGALRM after 2 minutes, as a broken lock leaves its waiters blocked for good).
 *   rwlock_integrity [ROUNDS=20000] [THREADS=4] */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define LOCKS 3

struct guarded {
    pthread_rwlock_t lock;
    long a, b;          /* a + b == 0 outside a write */
    int readers_inside; /* atomic */
    int writers_inside; /* atomic */
    uint64_t reads, writes; /* atomic: successful acquisitions */
};

static struct guarded guarded[LOCKS];
static long rounds = 20000;
static int violations; /* atomic */

static void violation(const char *what, int lock) {
    if (__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED) < 10) fprintf(stderr, "lock %d: %s\n", lock, what);
}

static struct timespec soon(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += 5;
    return ts;
}

/* Takes lock `g` for reading by call `how`: 1 if it got it. */
static int read_lock(struct guarded *g, unsigned how) {
    struct timespec ts;
    switch (how % 4) {
    case 0: return pthread_rwlock_rdlock(&g->lock) == 0;
    case 1: return pthread_rwlock_tryrdlock(&g->lock) == 0;
    case 2: ts = soon(CLOCK_REALTIME); return pthread_rwlock_timedrdlock(&g->lock, &ts) == 0;
    default: ts = soon(CLOCK_MONOTONIC); return pthread_rwlock_clockrdlock(&g->lock, CLOCK_MONOTONIC, &ts) == 0;
    }
}

static int write_lock(struct guarded *g, unsigned how) {
    struct timespec ts;
    switch (how % 4) {
    case 0: return pthread_rwlock_wrlock(&g->lock) == 0;
    case 1: return pthread_rwlock_trywrlock(&g->lock) == 0;
    case 2: ts = soon(CLOCK_REALTIME); return pthread_rwlock_timedwrlock(&g->lock, &ts) == 0;
    default: ts = soon(CLOCK_MONOTONIC); return pthread_rwlock_clockwrlock(&g->lock, CLOCK_MONOTONIC, &ts) == 0;
    }
}

static void *worker(void *arg) {
    uint64_t x = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    uint64_t reads[LOCKS] = {0}, writes[LOCKS] = {0};
    for (long i = 0; i < rounds; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int which = (int)((x >> 33) % LOCKS);
        unsigned how = (unsigned)(x >> 40);
        struct guarded *g = &guarded[which];
        /* Reads outnumber writes 7 to 1, and most reads are plain rdlocks (the step's case). */
        int write = (x >> 20) % 8 == 0;
        if (!write) {
            if (!read_lock(g, (x >> 24) % 4 == 0 ? how : 0)) continue;
            reads[which]++;
            __atomic_fetch_add(&g->readers_inside, 1, __ATOMIC_ACQ_REL);
            if (__atomic_load_n(&g->writers_inside, __ATOMIC_ACQUIRE) != 0) violation("a reader met a writer", which);
            if (g->a + g->b != 0) violation("a reader saw a half-done write", which);
            if (which == 0 && (x >> 50) % 16 == 0) { /* a read lock taken twice over */
                if (pthread_rwlock_rdlock(&g->lock) != 0) violation("a second read lock failed", which);
                else {
                    reads[which]++;
                    if (g->a + g->b != 0) violation("a recursive reader saw a half-done write", which);
                    pthread_rwlock_unlock(&g->lock);
                }
            }
            __atomic_fetch_sub(&g->readers_inside, 1, __ATOMIC_ACQ_REL);
            pthread_rwlock_unlock(&g->lock);
        } else {
            if (!write_lock(g, how)) continue;
            writes[which]++;
            if (__atomic_fetch_add(&g->writers_inside, 1, __ATOMIC_ACQ_REL) != 0) violation("two writers", which);
            if (__atomic_load_n(&g->readers_inside, __ATOMIC_ACQUIRE) != 0) violation("a writer met a reader", which);
            g->a += 1;
            if ((x >> 56) % 32 == 0) sched_yield(); /* let the others find it taken */
            g->b -= 1;
            if ((x >> 44) % 64 == 0 && pthread_rwlock_rdlock(&g->lock) != EDEADLK)
                violation("a read lock under one's own write lock did not report EDEADLK", which);
            __atomic_fetch_sub(&g->writers_inside, 1, __ATOMIC_ACQ_REL);
            pthread_rwlock_unlock(&g->lock);
        }
    }
    for (int k = 0; k < LOCKS; k++) {
        __atomic_fetch_add(&guarded[k].reads, reads[k], __ATOMIC_RELAXED);
        __atomic_fetch_add(&guarded[k].writes, writes[k], __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atol(argv[1]) : rounds;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    if (threads < 1 || threads > 64) threads = 4;
    alarm(120); /* a lock broken for good hangs its waiters: end with SIGALRM instead */
    pthread_rwlockattr_t attr;
    pthread_rwlock_init(&guarded[0].lock, NULL);
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&guarded[1].lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_rwlock_init(&guarded[2].lock, &attr);
    pthread_rwlockattr_destroy(&attr);

    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0) return 2;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);

    for (int k = 0; k < LOCKS; k++) {
        if (pthread_rwlock_trywrlock(&guarded[k].lock) != 0) violation("not free at the end", k);
        else {
            guarded[k].writes++;
            pthread_rwlock_unlock(&guarded[k].lock);
        }
        printf("%s %p reads %llu writes %llu\n", k == 0 ? "default" : k == 1 ? "writers-first" : "shared",
               (void *)&guarded[k].lock, (unsigned long long)guarded[k].reads,
               (unsigned long long)guarded[k].writes);
    }
    printf("violations %d\n", violations);
    return violations ? 1 : 0;
}
