// Two threads fight over one pthread mutex held across a short sleep, as code holding a lock
// across a blocking call does: whatever the CPUs are doing, each thread waits while the other
// holds it asleep. The lock finding (lock-held-while-asleep) names the sleep at its line and the
// waiters' user function, update_shared_counter.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile double shared_counter;

static void __attribute__((noinline)) update_shared_counter(int i) {
    pthread_mutex_lock(&counter_lock);
    for (int k = 0; k < 200; k++)
        shared_counter += (double)(i ^ k) * 0.5;
    usleep(200);
    pthread_mutex_unlock(&counter_lock);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < 800; i++)
        update_shared_counter(i);
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, worker, NULL);
    pthread_create(&b, NULL, worker, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%f\n", shared_counter);
    return 0;
}
