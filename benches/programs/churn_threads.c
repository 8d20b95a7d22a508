/* Throughput workload shaped like a server (larson-like): each thread keeps a table of live blocks
 * of 8..1000 bytes and replaces a random one at each step (free, then malloc of a new random
 * size); every 20,000 steps it swaps its whole table with the one another thread left in a shared
 * mailbox, so most blocks are freed by a thread other than the one that allocated them.
 *   churn_threads [THREADS=2] [SECONDS=1.5]
 * Prints the steps per second ("throughput N"). */
#include "workload_common.h"

#include <string.h>

#define SLOTS 1000
#define SWAP_EVERY 20000
#define MIN_SIZE 8
#define MAX_SIZE 1000

struct table {
    unsigned char *block[SLOTS];
};

static struct table *mailbox; /* never empty: a thread takes the table it finds and leaves its own */
static volatile uint64_t checksum;

static unsigned char *new_block(uint64_t *rng) {
    size_t size = MIN_SIZE + (size_t)(wl_next(rng) % (MAX_SIZE - MIN_SIZE + 1));
    unsigned char *p = malloc(size);
    if (!p) abort();
    p[0] = (unsigned char)size;
    p[size - 1] = 1;
    return p;
}

static struct table *new_table(uint64_t *rng) {
    struct table *t = malloc(sizeof *t);
    if (!t) abort();
    for (int i = 0; i < SLOTS; i++) t->block[i] = new_block(rng);
    return t;
}

static void free_table(struct table *t) {
    for (int i = 0; i < SLOTS; i++) free(t->block[i]);
    free(t);
}

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg * 0x1234567ull;
    struct table *t = new_table(&rng);
    uint64_t steps = 0, sum = 0;
    wl_ready();
    while (!wl_stop) {
        for (int k = 0; k < 256; k++) {
            uint32_t i = (uint32_t)(wl_next(&rng) % SLOTS);
            sum += t->block[i][0];
            free(t->block[i]);
            t->block[i] = new_block(&rng);
        }
        steps += 256;
        if (steps % SWAP_EVERY < 256) t = __atomic_exchange_n(&mailbox, t, __ATOMIC_ACQ_REL);
    }
    free_table(t);
    __atomic_fetch_add(&checksum, sum, __ATOMIC_RELAXED);
    return (void *)(uintptr_t)steps;
}

int main(int argc, char **argv) {
    int threads = (int)wl_arg(argc, argv, 1, 2);
    wl_run.seconds = argc > 2 ? atof(argv[2]) : 1.5;
    if (threads < 1) threads = 1;
    void **args = calloc((size_t)threads, sizeof *args), **res = calloc((size_t)threads, sizeof *res);
    for (int i = 0; i < threads; i++) args[i] = (void *)(uintptr_t)(i + 1);
    uint64_t rng = 99;
    mailbox = new_table(&rng);
    double elapsed = wl_timed_run(threads, worker, args, res);
    double steps = 0;
    for (int i = 0; i < threads; i++) steps += (double)(uintptr_t)res[i];
    free_table(mailbox);
    wl_report("churn_threads", steps, elapsed);
    free(args);
    free(res);
    return 0;
}
