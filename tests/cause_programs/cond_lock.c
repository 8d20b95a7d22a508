/* A condition variable plus a mutex used as a lock that threads hand to one another in turn: a
 * `turn` number guarded by the mutex; a thread waits on the condition variable until the turn is
 * its own, does its work, passes the turn to the next thread and broadcasts. Every thread does all
 * of its work while the turn is its own.
 *
 * Demonstrates: threads taking turns. No pthread lock is ever contended for long (the mutex is held
 * for a few instructions), yet only one thread runs at a time: the others wait on `turn_cv`, each
 * woken by the thread before it. Correct diagnosis: threads taking turns on `turn_cv`, about one
 * CPU wanted by N threads, work in `crunch` (cond_lock.c); remedy: hold it for less of the work.
 * With `own` as the third argument each thread has its own turn: the clean twin (parallel).
 * Usage: cond_lock [threads=2] [rounds=25] [shared|own] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct turn {
    pthread_mutex_t mutex;
    pthread_cond_t cv;
    int next;  /* whose turn it is */
    int count; /* threads sharing it */
};

static struct turn turn_cv = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 1};
static struct turn own_turn[64];
static int own;
static long rounds;
static pthread_barrier_t start;

static void take(struct turn *t, int me) {
    pthread_mutex_lock(&t->mutex);
    while (t->next != me) pthread_cond_wait(&t->cv, &t->mutex);
    pthread_mutex_unlock(&t->mutex);
}

static void give(struct turn *t, int me) {
    pthread_mutex_lock(&t->mutex);
    t->next = (me + 1) % t->count;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mutex);
}

/* About 50 ms of arithmetic: a turn much longer than a preemption on a loaded machine. */
__attribute__((noinline)) static double crunch(double x) {
    for (int k = 0; k < 20000000; k++) x = x * 1.0000001 + 1e-9;
    return x;
}

static void *worker(void *arg) {
    long id = (long)arg;
    struct turn *t = own ? &own_turn[id] : &turn_cv;
    int me = own ? 0 : (int)id;
    double x = 1.0 + id;
    pthread_barrier_wait(&start);
    for (long i = 0; i < rounds; i++) {
        take(t, me);
        x = crunch(x);
        give(t, me);
    }
    return (void *)(long)(x > 0);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    rounds = argc > 2 ? atol(argv[2]) : 25;
    own = argc > 3 && strcmp(argv[3], "own") == 0;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    for (int i = 0; i < threads; i++) {
        pthread_mutex_init(&own_turn[i].mutex, NULL);
        pthread_cond_init(&own_turn[i].cv, NULL);
        own_turn[i].count = 1;
    }
    turn_cv.count = threads;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    long ok = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok += (long)r;
    }
    printf("%ld\n", ok);
    return 0;
}
