/* Faithfulness case for read-write locks: argv[1] reader threads (default 3) and one writer share
 * a pthread_rwlock_t; each reader takes it for reading 300,000 times, the writer for writing
 * 100,000 times, each holding it for a short loop. Each thread first tries the lock and counts a
 * failed try before it blocks: the program's own count of the acquisitions that had to wait,
 * which a profiler must not change. The threads start together (yielding, no futex). The lock is a
 * global of a non-PIE build, so that a kernel tracepoint filter can name its futex words
 * (benches/faithfulness.sh --program rwlock). Prints "VALUE writer_waits W reader_waits R". */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define READS 300000
#define WRITES 100000

pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static volatile uint64_t value;
static uint64_t writer_waits, reader_waits;
static int arrived, threads;

static void start_together(void) {
    __atomic_add_fetch(&arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < threads) sched_yield(); /* more threads than CPUs, real-time */
}

static void *reader(void *arg) {
    (void)arg;
    start_together();
    uint64_t waited = 0, sum = 0;
    for (int i = 0; i < READS; i++) {
        if (pthread_rwlock_tryrdlock(&lock) != 0) {
            waited++;
            pthread_rwlock_rdlock(&lock);
        }
        for (int k = 0; k < 100; k++) sum += value;
        pthread_rwlock_unlock(&lock);
    }
    __atomic_add_fetch(&reader_waits, waited, __ATOMIC_RELAXED);
    return (void *)(uintptr_t)sum;
}

static void *writer(void *arg) {
    (void)arg;
    start_together();
    for (int i = 0; i < WRITES; i++) {
        if (pthread_rwlock_trywrlock(&lock) != 0) {
            writer_waits++;
            pthread_rwlock_wrlock(&lock);
        }
        for (int k = 0; k < 100; k++) value = value * 3 + 1;
        pthread_rwlock_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int readers = argc > 1 ? atoi(argv[1]) : 3;
    if (readers < 1 || readers > 15) return 2;
    threads = readers + 1;
    pthread_t t[16];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, i == 0 ? writer : reader, NULL) != 0) return 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%llu writer_waits %llu reader_waits %llu\n", (unsigned long long)value, (unsigned long long)writer_waits,
           (unsigned long long)reader_waits);
    return 0;
}
