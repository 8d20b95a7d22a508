// Two kinds of threads fight over one mutex, for tests/stacks_locks.rs: `slow_holder` takes it
// and holds it for a while; `waiter` takes it from one known line and releases it at once.
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

static void spin_us(long us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

__attribute__((noinline)) static void hold_for_a_while(void) {
    pthread_mutex_lock(&lock); // MARK holder_lock
    spin_us(200);
    counter++;
    pthread_mutex_unlock(&lock); // MARK holder_unlock
}

__attribute__((noinline)) static void *slow_holder(void *arg) {
    (void)arg;
    for (int i = 0; i < 1500; i++) {
        hold_for_a_while();
        spin_us(20);
    }
    return NULL;
}

__attribute__((noinline)) static void take_briefly(void) {
    pthread_mutex_lock(&lock); // MARK waiter_lock
    counter++;
    pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) static void *waiter(void *arg) {
    (void)arg;
    for (int i = 0; i < 3000; i++) {
        take_briefly();
        spin_us(50);
    }
    return NULL;
}

int main(void) {
    pthread_t h, w1, w2;
    pthread_create(&h, NULL, slow_holder, NULL);
    pthread_create(&w1, NULL, waiter, NULL);
    pthread_create(&w2, NULL, waiter, NULL);
    pthread_join(h, NULL);
    pthread_join(w1, NULL);
    pthread_join(w2, NULL);
    printf("%lu\n", counter);
    return 0;
}
