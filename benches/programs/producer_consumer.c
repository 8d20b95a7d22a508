/* Throughput workload shaped like a producer/consumer pipeline (xmalloc-test-like): producer
 * threads allocate blocks of 8..512 bytes and hand them over in batches of 64 through a bounded
 * queue (a mutex and two condition variables); consumer threads free them. Every block is freed by
 * a thread other than the one that allocated it.
 *   producer_consumer [PRODUCERS=1] [CONSUMERS=1] [SECONDS=1.5]
 * Prints the blocks freed per second ("throughput N"). */
#include "workload_common.h"

#define BATCH 64
#define QUEUE 64 /* batches */
#define MIN_SIZE 8
#define MAX_SIZE 512

struct batch {
    unsigned char *block[BATCH];
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    struct batch *item[QUEUE];
    unsigned head, tail; /* tail - head batches are queued */
    int producers_left;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, 0};

static volatile uint64_t checksum;

static void put(struct batch *b) {
    pthread_mutex_lock(&queue.lock);
    while (queue.tail - queue.head == QUEUE) pthread_cond_wait(&queue.not_full, &queue.lock);
    queue.item[queue.tail++ % QUEUE] = b;
    pthread_cond_signal(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
}

/* NULL once the producers are done and the queue is empty. */
static struct batch *take(void) {
    pthread_mutex_lock(&queue.lock);
    while (queue.tail == queue.head && queue.producers_left > 0)
        pthread_cond_wait(&queue.not_empty, &queue.lock);
    struct batch *b = NULL;
    if (queue.tail != queue.head) {
        b = queue.item[queue.head++ % QUEUE];
        pthread_cond_signal(&queue.not_full);
    }
    pthread_mutex_unlock(&queue.lock);
    return b;
}

static void *producer(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg;
    wl_ready();
    while (!wl_stop) {
        struct batch *b = malloc(sizeof *b);
        if (!b) abort();
        for (int i = 0; i < BATCH; i++) {
            size_t size = MIN_SIZE + (size_t)(wl_next(&rng) % (MAX_SIZE - MIN_SIZE + 1));
            b->block[i] = malloc(size);
            if (!b->block[i]) abort();
            b->block[i][0] = (unsigned char)i;
            b->block[i][size - 1] = (unsigned char)size;
        }
        put(b);
    }
    pthread_mutex_lock(&queue.lock);
    if (--queue.producers_left == 0) pthread_cond_broadcast(&queue.not_empty);
    pthread_mutex_unlock(&queue.lock);
    return NULL;
}

/* Counts the blocks freed before the stop; the rest are drained uncounted. */
static void *consumer(void *arg) {
    (void)arg;
    uint64_t freed = 0, sum = 0;
    wl_ready();
    for (struct batch *b; (b = take()) != NULL;) {
        for (int i = 0; i < BATCH; i++) {
            sum += b->block[i][0];
            free(b->block[i]);
        }
        free(b);
        if (!wl_stop) freed += BATCH;
    }
    __atomic_fetch_add(&checksum, sum, __ATOMIC_RELAXED);
    return (void *)(uintptr_t)freed;
}

static void *role(void *arg) {
    uintptr_t i = (uintptr_t)arg;
    return i & 1 ? producer((void *)(i >> 1)) : consumer(NULL);
}

int main(int argc, char **argv) {
    int producers = (int)wl_arg(argc, argv, 1, 1), consumers = (int)wl_arg(argc, argv, 2, 1);
    wl_run.seconds = argc > 3 ? atof(argv[3]) : 1.5;
    if (producers < 1) producers = 1;
    if (consumers < 1) consumers = 1;
    int n = producers + consumers;
    queue.producers_left = producers;
    void **args = calloc((size_t)n, sizeof *args), **res = calloc((size_t)n, sizeof *res);
    for (int i = 0; i < n; i++) args[i] = (void *)(i < producers ? ((uintptr_t)(i + 1) << 1 | 1) : 0);
    double elapsed = wl_timed_run(n, role, args, res);
    double freed = 0;
    for (int i = producers; i < n; i++) freed += (double)(uintptr_t)res[i];
    wl_report("producer_consumer", freed, elapsed);
    free(args);
    free(res);
    return 0;
}
