/* Readers only: N threads look items up in a read-mostly table under pthread_rwlock_rdlock; no
 * writer ever runs while they read, so no acquisition waits.
 *
 * Demonstrates: read-side rwlock contention. Every rdlock and unlock updates the lock's reader
 * count with an atomic instruction, so the one cache line holding it moves between the CPUs on
 * every lookup; the lookups are short, so most of the threads' time is in rdlock/unlock
 * although no acquisition is ever contended. Correct diagnosis: the shared reader count
 * bouncing between CPUs, at lookup (rwlock_readers.c), not lock waits; remedy: per-thread or
 * sharded reader counts, an RCU-like snapshot, a copy per thread.
 * Usage: rwlock_readers [threads=2] [lookups per thread=15000000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define TABLE 1024
static long table[TABLE];
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static long lookups;
static pthread_barrier_t start;

__attribute__((noinline)) static long lookup(unsigned key) {
    pthread_rwlock_rdlock(&table_lock);
    long v = table[key % TABLE];
    pthread_rwlock_unlock(&table_lock);
    return v;
}

static void *reader(void *arg) {
    unsigned key = (unsigned)(long)arg * 7919u;
    long sum = 0;
    pthread_barrier_wait(&start);
    for (long i = 0; i < lookups; i++) sum += lookup(key += 40503u);
    return (void *)sum;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    lookups = argc > 2 ? atol(argv[2]) : 15000000;
    if (threads < 1) threads = 1;
    if (threads > 64) threads = 64;
    for (int i = 0; i < TABLE; i++) table[i] = i * 3;
    /* one write before the readers start: the table is read-mostly */
    pthread_rwlock_wrlock(&table_lock);
    table[0] = 1;
    pthread_rwlock_unlock(&table_lock);
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, reader, (void *)i);
    long total = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("total %ld\n", total);
    return 0;
}
