/* Two threads share one pthread_rwlock_t and one pthread_spinlock_t: each takes the rwlock for
 * reading READS times and for writing WRITES times (interleaved, with a yield inside every 8th
 * write so that the other thread finds it taken), then the spin lock SPINS times. Every
 * acquisition is counted by kind whether it waited or not; the test checks the totals. Prints
 * "rwlock ADDRESS spin ADDRESS reads R writes W spins S" (totals over both threads). */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#define READS 30000
#define WRITES 3000
#define SPINS 20000

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_barrier_t start;
static volatile uint64_t value;

static void *worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start);
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&rw);
        value += 1;
        pthread_rwlock_unlock(&rw);
        if (i % (READS / WRITES) == 0) {
            pthread_rwlock_wrlock(&rw);
            value *= 3;
            if (i % 80 == 0) sched_yield();
            pthread_rwlock_unlock(&rw);
        }
    }
    for (int i = 0; i < SPINS; i++) {
        pthread_spin_lock(&spin);
        value ^= (uint64_t)i;
        pthread_spin_unlock(&spin);
    }
    return NULL;
}

int main(void) {
    pthread_t a, b;
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_barrier_init(&start, NULL, 2);
    if (pthread_create(&a, NULL, worker, NULL) != 0) return 10;
    if (pthread_create(&b, NULL, worker, NULL) != 0) return 11;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("rwlock %p spin %p reads %d writes %d spins %d\n", (void *)&rw, (void *)&spin, 2 * READS, 2 * WRITES,
           2 * SPINS);
    return 0;
}
