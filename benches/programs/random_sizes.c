/* Throughput workload shaped like glibc's malloc-thread benchmark: each thread keeps 1024 live
 * blocks and replaces a random one at each step, with sizes spread evenly over the powers of two
 * from 4 bytes to 32 KiB (so about a third of the calls are of 1 KiB or more).
 *   random_sizes [THREADS=2] [SECONDS=1.5]
 * Prints the steps per second ("throughput N"). */
#include "workload_common.h"

#define SLOTS 1024
#define SIZES 4096 /* drawn in advance: the step is then a table look-up */

static volatile uint64_t checksum;

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(uintptr_t)arg * 0x9876543ull;
    static __thread uint32_t sizes[SIZES];
    for (int i = 0; i < SIZES; i++) {
        uint32_t octave = 2 + (uint32_t)(wl_next(&rng) % 13); /* 4 .. 32767 */
        sizes[i] = (1u << octave) + (uint32_t)(wl_next(&rng) % (1u << octave));
    }
    unsigned char *block[SLOTS] = {0};
    uint64_t steps = 0, sum = 0;
    uint32_t next = 0;
    wl_ready();
    while (!wl_stop) {
        for (int k = 0; k < 256; k++) {
            uint32_t i = (uint32_t)(wl_next(&rng) % SLOTS);
            if (block[i]) sum += block[i][0];
            free(block[i]);
            uint32_t size = sizes[next++ % SIZES];
            block[i] = malloc(size);
            if (!block[i]) abort();
            block[i][0] = (unsigned char)size;
        }
        steps += 256;
    }
    for (int i = 0; i < SLOTS; i++) free(block[i]);
    __atomic_fetch_add(&checksum, sum, __ATOMIC_RELAXED);
    return (void *)(uintptr_t)steps;
}

int main(int argc, char **argv) {
    int threads = (int)wl_arg(argc, argv, 1, 2);
    wl_run.seconds = argc > 2 ? atof(argv[2]) : 1.5;
    if (threads < 1) threads = 1;
    void **args = calloc((size_t)threads, sizeof *args), **res = calloc((size_t)threads, sizeof *res);
    for (int i = 0; i < threads; i++) args[i] = (void *)(uintptr_t)(i + 1);
    double elapsed = wl_timed_run(threads, worker, args, res);
    double steps = 0;
    for (int i = 0; i < threads; i++) steps += (double)(uintptr_t)res[i];
    wl_report("random_sizes", steps, elapsed);
    free(args);
    free(res);
    return 0;
}
