/* Faithfulness case for condition variables: a bounded queue of 16 slots under one mutex with two
 * condition variables, argv[1] producers (default 1) putting 400,000 items in all and as many
 * consumers taking them. The program counts the waits it asked for: a consumer that found the
 * queue empty, a producer that found it full (each a pthread_cond_wait), and how often the mutex
 * changed hands. A profiler must not change them. The threads start together (yielding, no futex).
 * The mutex and the condition variables are one global of a non-PIE build, so that a kernel
 * tracepoint filter can name their futex words (benches/faithfulness.sh --program cond).
 * Prints "ITEMS-CHECKSUM handoffs H waits W". */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TOTAL 400000
#define SLOTS 16

struct sync_words {
    pthread_mutex_t mutex;
    pthread_cond_t not_empty, not_full;
};
struct sync_words words = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};

static uint64_t queue[SLOTS], head, tail, checksum, handoffs, waits;
static int last_owner = -1, arrived, threads;

static void take_mutex(int me) {
    pthread_mutex_lock(&words.mutex);
    if (last_owner != me) handoffs++;
    last_owner = me;
}

static void start_together(void) {
    __atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < threads) sched_yield(); /* more threads than CPUs, real-time */
}

struct role {
    int me, producers;
};

static void *producer(void *arg) {
    const struct role *r = arg;
    start_together();
    for (uint64_t i = 0; i < TOTAL / (uint64_t)r->producers; i++) {
        take_mutex(r->me);
        while (tail - head == SLOTS) {
            waits++;
            pthread_cond_wait(&words.not_full, &words.mutex);
            last_owner = r->me;
        }
        queue[tail++ % SLOTS] = i;
        pthread_cond_signal(&words.not_empty);
        pthread_mutex_unlock(&words.mutex);
    }
    return NULL;
}

static void *consumer(void *arg) {
    const struct role *r = arg;
    start_together();
    for (uint64_t i = 0; i < TOTAL / (uint64_t)r->producers; i++) {
        take_mutex(r->me);
        while (tail == head) {
            waits++;
            pthread_cond_wait(&words.not_empty, &words.mutex);
            last_owner = r->me;
        }
        checksum = checksum * 31 + queue[head++ % SLOTS];
        pthread_cond_signal(&words.not_full);
        pthread_mutex_unlock(&words.mutex);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int producers = argc > 1 ? atoi(argv[1]) : 1;
    if (producers < 1 || producers > 8) return 2;
    threads = 2 * producers;
    pthread_t t[16];
    struct role roles[16];
    for (int i = 0; i < threads; i++) {
        roles[i] = (struct role){i, producers};
        if (pthread_create(&t[i], NULL, i % 2 ? consumer : producer, &roles[i]) != 0) return 1;
    }
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%llu handoffs %llu waits %llu\n", (unsigned long long)checksum, (unsigned long long)handoffs,
           (unsigned long long)waits);
    return 0;
}
