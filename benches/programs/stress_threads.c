/* Multi-threaded allocator stress (mstress-like), fixed work: for each of ITERATIONS rounds, new
 * threads start, each allocates objects (mostly small, one in 100 ten times larger, one in 1000 a
 * hundred times), fills them with a pattern, keeps some of them alive across rounds, swaps some
 * with other threads through a shared transfer table (so they are freed by another thread,
 * possibly in a later round), checks the pattern and frees the rest; then the threads end.
 *   stress_threads [THREADS=2] [ITERATIONS=50] [SCALE=100]
 * Prints the number of objects left at the end (which depends on how the threads interleave). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TRANSFERS 1000

static uintptr_t *transfer[TRANSFERS];
static int threads_n = 2, scale = 100;

static uint64_t rnd(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int chance(uint64_t *s, unsigned per_mille) { return rnd(s) % 1000 < per_mille; }

/* An object of `items` words: the count first, then a pattern the free checks. */
static uintptr_t *alloc_items(uint64_t *s, size_t items) {
    if (chance(s, 1)) items *= 100;
    else if (chance(s, 10)) items *= 10;
    if (items == 0) items = 1;
    uintptr_t *p = malloc(items * sizeof *p);
    if (!p) abort();
    p[0] = items;
    for (size_t i = 1; i < items; i++) p[i] = (items - i) ^ 0x5a5a5a5aul;
    return p;
}

static void free_items(uintptr_t *p) {
    if (!p) return;
    size_t items = p[0];
    for (size_t i = 1; i < items; i++)
        if (p[i] != ((items - i) ^ 0x5a5a5a5aul)) abort();
    free(p);
}

static uintptr_t *retained[64][2048];
static size_t retained_n[64];

static void *stress(void *arg) {
    uintptr_t id = (uintptr_t)arg & 63;
    uint64_t s = (uintptr_t)arg * 0x12345ull + 1;
    size_t allocs = 100 * (size_t)scale, retain = allocs / 2;
    uintptr_t **data = malloc(allocs * sizeof *data);
    if (!data) abort();
    size_t data_n = 0;
    while (allocs > 0 || retain > 0) {
        if (retain == 0 || (allocs > 0 && chance(&s, 500))) {
            allocs--; /* a short-lived object */
            if (data_n < 100 * (size_t)scale) data[data_n++] = alloc_items(&s, rnd(&s) % 128);
        } else {
            retain--; /* an object that lives on to a later round */
            size_t i = retained_n[id] < 2048 ? retained_n[id]++ : rnd(&s) % 2048;
            free_items(retained[id][i]);
            retained[id][i] = alloc_items(&s, rnd(&s) % 128);
        }
        if (data_n > 0 && chance(&s, 660)) { /* free a random short-lived one */
            size_t i = rnd(&s) % data_n;
            free_items(data[i]);
            data[i] = data[--data_n];
        }
        if (data_n > 0 && chance(&s, 20)) { /* hand one to another thread */
            size_t i = rnd(&s) % data_n, t = rnd(&s) % TRANSFERS;
            uintptr_t *old = __atomic_exchange_n(&transfer[t], data[i], __ATOMIC_ACQ_REL);
            data[i] = old ? old : data[--data_n];
        }
    }
    for (size_t i = 0; i < data_n; i++) free_items(data[i]);
    free(data);
    return NULL;
}

int main(int argc, char **argv) {
    threads_n = argc > 1 ? atoi(argv[1]) : 2;
    int iterations = argc > 2 ? atoi(argv[2]) : 50;
    scale = argc > 3 ? atoi(argv[3]) : 100;
    if (threads_n < 1 || threads_n > 64) threads_n = 2;
    pthread_t t[64];
    for (int round = 0; round < iterations; round++) {
        for (int i = 0; i < threads_n; i++)
            if (pthread_create(&t[i], NULL, stress, (void *)(uintptr_t)(round * 64 + i)) != 0) return 1;
        for (int i = 0; i < threads_n; i++) pthread_join(t[i], NULL);
    }
    size_t left = 0;
    for (int i = 0; i < TRANSFERS; i++) {
        left += transfer[i] != NULL;
        free_items(transfer[i]);
    }
    for (int i = 0; i < threads_n; i++)
        for (size_t j = 0; j < retained_n[i]; j++) {
            left++;
            free_items(retained[i][j]);
        }
    printf("stress_threads: %d threads, %d rounds, %zu objects left\n", threads_n, iterations, left);
    return 0;
}
