/* A lock of the program's own on a raw futex word (Drepper's "Futexes Are Tricky" mutex): two
 * threads take it around real work. stallscope must see the futex waits through syscall(), name
 * the word by its symbol (table_lock), count them as lock waits and say so at the user's line. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int table_lock; /* 0 free, 1 taken, 2 taken with waiters */
static uint64_t table[4096];

static void futex_lock(_Atomic int *w) {
    int c = 0;
    if (atomic_compare_exchange_strong(w, &c, 1)) return;
    if (c != 2) c = atomic_exchange(w, 2);
    while (c != 0) {
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange(w, 2);
    }
}

static void futex_unlock(_Atomic int *w) {
    if (atomic_fetch_sub(w, 1) != 1) {
        atomic_store(w, 0);
        syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

static uint64_t mix(uint64_t x, int rounds) {
    for (int i = 0; i < rounds; i++) x = x * 6364136223846793005ull + 1442695040888963407ull, x ^= x >> 29;
    return x;
}

static pthread_barrier_t start;
static long items = 200000;

__attribute__((noinline)) static void update_table(uint64_t key) {
    futex_lock(&table_lock); /* MARK update_table */
    table[mix(key, 300) % 4096]++;
    /* Now and then the holder sleeps with the lock held: the other thread waits for it even on
     * a machine too busy to run both at once, so the contention is certain. */
    if (key % 512 == 0) usleep(200);
    futex_unlock(&table_lock);
}

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < items; i++) update_table(mix(seed + (uint64_t)i, 20));
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) items = atol(argv[2]);
    pthread_t t[64];
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i * 1000003));
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    uint64_t sum = 0;
    for (int i = 0; i < 4096; i++) sum += table[i];
    printf("updates %llu\n", (unsigned long long)sum);
    return sum == (uint64_t)n * (uint64_t)items ? 0 : 1;
}
