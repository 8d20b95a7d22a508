/* An allocator-bound load: each thread allocates blocks too large for glibc's per-thread cache
 * and hands half of them to its neighbour to free, so frees go back to other threads' arenas
 * under their locks. Allocators with per-thread caches for these sizes are much faster. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 600000UL
#define BATCH 64

static int threads;
static unsigned long rounds;
static void *volatile mailbox[64][BATCH];

__attribute__((noinline)) static void churn(int self) {
    void *mine[BATCH];
    unsigned seed = (unsigned)self * 2654435761u + 1;
    for (unsigned long r = 0; r < rounds / BATCH; r++) {
        for (int i = 0; i < BATCH; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t size = 1100 + (seed >> 16) % 6000;
            mine[i] = malloc(size);
            memset(mine[i], 1, 64);
        }
        /* Half freed here, half swapped into the neighbour's mailbox and freed there. */
        int next = (self + 1) % threads;
        for (int i = 0; i < BATCH; i++) {
            if (i % 2 == 0) {
                free(mine[i]);
            } else {
                void *old = __atomic_exchange_n(&mailbox[next][i], mine[i], __ATOMIC_ACQ_REL);
                free(old);
            }
        }
    }
}

static void *worker(void *arg) {
    churn((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv) {
    threads = argc > 1 ? atoi(argv[1]) : 1;
    if (threads < 1 || threads > 64) threads = 1;
    rounds = ROUNDS / threads;
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < BATCH; j++) free(mailbox[i][j]);
    return 0;
}
