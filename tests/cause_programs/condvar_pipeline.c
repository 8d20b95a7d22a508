/* A producer/consumer pipeline on a mutex and two condition variables: one producer makes items
 * (expensive), N consumers process them (cheap), through a bounded queue.
 *
 * Demonstrates: who woke whom. The consumers spend most of their time in pthread_cond_wait for
 * "not empty"; the producer's pthread_cond_signal after each item wakes one of them. The
 * producer is the critical path: adding consumers does not help.
 * Correct diagnosis: consumers blocked waiting for work (condition wait in take_item,
 * condvar_pipeline.c) and woken by the producer thread from put_item (signal); critical path =
 * the producer's make_item; "the pipeline is limited by its single producer". Remedy: more
 * producers / split make_item. Consumers' waiting is NOT a lock problem (the queue mutex is
 * barely contended) and main's join is not a cause.
 * Usage: condvar_pipeline [consumers=2] [items=20000] */
#include <pthread.h>
#include <stdio.h>
#include "truth.h"

#define QUEUE 16
static double queue[QUEUE];
static int head, count, done;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static long items;

__attribute__((noinline)) static double make_item(long i, double seed) {
    double x = seed + (double)i;
    for (int k = 0; k < 30000; k++) x = x * 0.99999 + 1e-6 * (double)(k & 3);
    return x;
}

__attribute__((noinline)) static double use_item(double v) {
    for (int k = 0; k < 5000; k++) v = v * 0.99999 + 1e-6;
    return v;
}

__attribute__((noinline)) static void put_item(double v) {
    pthread_mutex_lock(&queue_lock);
    while (count == QUEUE) pthread_cond_wait(&not_full, &queue_lock);
    queue[(head + count++) % QUEUE] = v;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&queue_lock);
}

/* 0 when the producer is done and the queue is empty. */
__attribute__((noinline)) static int take_item(double *v) {
    pthread_mutex_lock(&queue_lock);
    while (count == 0 && !done) pthread_cond_wait(&not_empty, &queue_lock);
    int got = count > 0;
    if (got) {
        *v = queue[head];
        head = (head + 1) % QUEUE;
        count--;
        pthread_cond_signal(&not_full);
    }
    pthread_mutex_unlock(&queue_lock);
    return got;
}

static void *producer(void *arg) {
    (void)arg;
    truth_start();
    double seed = 0;
    for (long i = 0; i < items; i++) put_item(seed = make_item(i, seed));
    pthread_mutex_lock(&queue_lock);
    done = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&queue_lock);
    truth_end("producer");
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    truth_start();
    double v, sum = 0;
    while (take_item(&v)) sum += use_item(v);
    truth_end("consumer");
    return (void *)(long)sum;
}

int main(int argc, char **argv) {
    truth_start();
    int consumers = (int)arg_or(argc, argv, 1, 2);
    if (consumers > 64) consumers = 64;
    items = arg_or(argc, argv, 2, 20000);
    pthread_t p, c[64];
    pthread_create(&p, NULL, producer, NULL);
    for (int i = 0; i < consumers; i++) pthread_create(&c[i], NULL, consumer, NULL);
    pthread_join(p, NULL);
    for (int i = 0; i < consumers; i++) pthread_join(c[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
