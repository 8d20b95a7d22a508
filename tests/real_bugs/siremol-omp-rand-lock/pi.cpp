// Monte Carlo estimate of pi with OpenMP, the teaching example of chryswoods/siremol.org#57:
// `pi before` draws its points with the C library's rand(), whose state glibc guards with one
// lock (random()'s), `pi after` with a std::minstd_rand per thread, the fix of that pull request.
// The thread count is OMP_NUM_THREADS (or the second argument).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <random>

static const long POINTS = 40000000;

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "before") && strcmp(argv[1], "after"))) {
        fprintf(stderr, "usage: %s before|after [THREADS]\n", argv[0]);
        return 2;
    }
    if (argc > 2)
        omp_set_num_threads(atoi(argv[2]));
    bool fixed = !strcmp(argv[1], "after");
    long inside = 0;
#pragma omp parallel reduction(+ : inside)
    {
        std::minstd_rand gen(12345u + 7919u * omp_get_thread_num());
        std::uniform_real_distribution<double> unit(0.0, 1.0);
#pragma omp for schedule(static)
        for (long i = 0; i < POINTS; i++) {
            double x, y;
            if (fixed) {
                x = unit(gen);
                y = unit(gen);
            } else {
                x = rand() / (double)RAND_MAX;
                y = rand() / (double)RAND_MAX;
            }
            if (x * x + y * y <= 1.0)
                inside++;
        }
    }
    printf("%d threads, pi ~ %.3f\n", omp_get_max_threads(), 4.0 * inside / POINTS);
    return 0;
}
