/* A read-mostly table behind one pthread_rwlock_t: each step read-locks it, reads one entry and
 * unlocks; one step in 1000 write-locks it and updates an entry. One thread by default, so the
 * lock is never contended and the cost is the lock calls themselves (and any hook around them).
 *   rwlock_read [STEPS=20000000] [THREADS=1]
 * Prints a checksum (deterministic with one thread). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ENTRIES 1024

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static uint64_t table[ENTRIES];
static long steps = 20000000;

static void *reader(void *arg) {
    uint64_t x = (uintptr_t)arg + 1, sum = 0;
    for (long i = 0; i < steps; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (i % 1000 == 999) {
            pthread_rwlock_wrlock(&lock);
            table[(x >> 40) % ENTRIES] += i;
            pthread_rwlock_unlock(&lock);
        } else {
            pthread_rwlock_rdlock(&lock);
            sum += table[(x >> 40) % ENTRIES];
            pthread_rwlock_unlock(&lock);
        }
    }
    return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv) {
    steps = argc > 1 ? atol(argv[1]) : steps;
    int threads = argc > 2 ? atoi(argv[2]) : 1;
    if (threads < 1 || threads > 64) threads = 1;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)i) != 0) return 1;
    uint64_t check = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        check += (uint64_t)(uintptr_t)r;
    }
    printf("rwlock_read: %ld steps x %d threads, checksum %llu\n", steps, threads, (unsigned long long)check);
    return 0;
}
