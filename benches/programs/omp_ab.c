/* An OpenMP region hook's cost measured inside one process: a program of many tiny
 * regions (tests/omp_programs/small_regions.c's loop of 256 cheap iterations) calls GOMP_parallel
 * through a function pointer, which the driver switches between libgomp's own and the hooks of
 * libraries loaded with dlopen (RTLD_LOCAL: they interpose nothing, each starts as it would
 * preloaded, its flusher included), one round of PER regions at a time, the mode that starts
 * rotating from round to round. Rounds that sit next to each other see the same host, whose drifts
 * move a whole process by more than the hook costs (benches/programs/hook_ab.c does the same for
 * the allocator's hooks).
 *
 *   OMP_NUM_THREADS=2 omp_ab PER ROUNDS MODE...
 * MODE is `plain` (libgomp's GOMP_parallel, also under LD_PRELOAD) or the path of a library
 * exporting GOMP_parallel (an interposer build: benches/interposer_at.sh REVISION PATH). Prints
 * per mode the median of its per-round ratios of wall time to the first mode's round, with the
 * quartiles, and its median round's time per region. Wall time: the team spins while the master
 * runs the hook, so the hook costs the team what it costs the master.
 *
 * Build: gcc -O2 -fopenmp -o omp_ab benches/programs/omp_ab.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*parallel_fn)(void (*)(void *), void *, unsigned, unsigned);

#define MAX_MODES 8
#define CELLS 256

static double cells[CELLS];

/* The outlined body of `#pragma omp parallel for schedule(static)` over the cells. */
static void body(void *data) {
    (void)data;
    int n = omp_get_num_threads(), me = omp_get_thread_num();
    int chunk = (CELLS + n - 1) / n, lo = me * chunk, hi = lo + chunk > CELLS ? CELLS : lo + chunk;
    for (int i = lo; i < hi; i++) cells[i] = cells[i] * 0.999 + 1.0;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc - 3 > MAX_MODES) {
        fprintf(stderr, "usage: omp_ab PER ROUNDS MODE... (at most %d modes)\n", MAX_MODES);
        return 2;
    }
    int per = atoi(argv[1]), rounds = atoi(argv[2]), modes = argc - 3;
    if (per < 1) per = 1;
    if (rounds < 4) rounds = 4;
    parallel_fn fns[MAX_MODES];
    for (int m = 0; m < modes; m++) {
        const char *mode = argv[3 + m];
        /* libgomp's own, found through its handle: under LD_PRELOAD the name is the hook's */
        void *h = strcmp(mode, "plain") == 0 ? dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD)
                                              : dlopen(mode, RTLD_NOW | RTLD_LOCAL);
        fns[m] = h ? (parallel_fn)dlsym(h, "GOMP_parallel") : NULL;
        if (!fns[m]) {
            fprintf(stderr, "omp_ab: %s: no GOMP_parallel (%s)\n", mode, h ? "not exported" : dlerror());
            return 1;
        }
    }
    for (int w = 0; w < 2000; w++) fns[w % modes](body, NULL, 0, 0); /* the team made, the hooks' tables */
    double *ms = malloc(sizeof(double) * (size_t)rounds * (size_t)modes);
    double *ratio = malloc(sizeof(double) * (size_t)rounds);
    if (!ms || !ratio) return 1;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < modes; k++) {
            int m = (r + k) % modes;
            double start = now_ms();
            for (int i = 0; i < per; i++) fns[m](body, NULL, 0, 0);
            ms[r * modes + m] = now_ms() - start;
        }
    for (int m = 0; m < modes; m++) {
        for (int r = 0; r < rounds; r++) ratio[r] = ms[r * modes + m] / ms[r * modes];
        qsort(ratio, (size_t)rounds, sizeof(double), by_value);
        double median = ratio[rounds / 2], q1 = ratio[rounds / 4], q3 = ratio[3 * rounds / 4];
        for (int r = 0; r < rounds; r++) ratio[r] = ms[r * modes + m];
        qsort(ratio, (size_t)rounds, sizeof(double), by_value);
        printf("%-44s %.3f (%.3f-%.3f)  %.0f ns a region\n", argv[3 + m], median, q1, q3, ratio[rounds / 2] * 1e6 / per);
    }
    printf("threads %d, cells %.3f\n", omp_get_max_threads(), cells[0]);
    free(ms);
    free(ratio);
    return 0;
}
