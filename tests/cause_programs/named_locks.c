/* Two contended pthread mutexes of different kinds: a global one (static storage, in the
 * program's .data) and one inside a heap-allocated struct.
 *
 * Demonstrates: naming locks. Each thread updates a global table under table_lock, then an
 * account (allocated by open_account) under account->lock; both are contended at 2 threads.
 * Correct diagnosis: two lock-contention findings, the first named by its symbol "table_lock"
 * (named_locks.c, a global: its address falls in the executable's .data, found in the symbol
 * table), the second by its allocation site "the mutex inside the 4096-byte block allocated at
 * open_account (named_locks.c) called from main" (a heap address: by the allocation that
 * contains it). Waiters' user frames: record_in_table and credit_account. NOT "pthread mutex
 * 0x55...". The table lock is held about twice as long, so it gets about twice the waiting.
 * Usage: named_locks [threads=2] [total operations=5000000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "truth.h"

struct account {
    char name[64];
    pthread_mutex_t lock;
    double balance;
    double history[500];
};

pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static double table[64];
static struct account *account;
static long operations;

__attribute__((noinline)) static struct account *open_account(const char *name) {
    struct account *a = calloc(1, 4096);
    snprintf(a->name, sizeof a->name, "%s", name);
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

__attribute__((noinline)) static void record_in_table(long i, double v) {
    pthread_mutex_lock(&table_lock);
    for (int k = 0; k < 64; k++) table[(i + k) & 63] = table[(i + k) & 63] * 0.5 + v / (double)(k + 1);
    pthread_mutex_unlock(&table_lock);
}

__attribute__((noinline)) static void credit_account(struct account *a, long i, double v) {
    pthread_mutex_lock(&a->lock);
    a->balance += v;
    for (int k = 0; k < 32; k++) a->history[(i + k) % 500] = a->history[(i + k) % 500] * 0.5 + v / (double)(k + 1);
    pthread_mutex_unlock(&a->lock);
}

static void *worker(void *arg) {
    truth_start();
    double v = 1.0 + (double)(long)arg;
    for (long i = 0; i < operations; i++) {
        for (int k = 0; k < 10; k++) v = v * 0.999 + 0.001; /* private work */
        record_in_table(i, v);
        credit_account(account, i, v);
    }
    truth_end("worker");
    return NULL;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    operations = arg_or(argc, argv, 2, 5000000) / threads;
    account = open_account("shared");
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%f %f\n", table[0], account->balance);
    truth_end("main");
    return 0;
}
