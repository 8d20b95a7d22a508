// A balanced tbb::parallel_reduce in rounds with a pause between them: TBB's workers go idle and
// wake again. stallscope should stay quiet about it (idle workers are never a cause).
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_reduce.h>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

static double step(double x, int r) {
    for (int k = 0; k < r; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    double total = 0;
    for (int round = 0; round < 8; round++) {
        total += tbb::parallel_reduce(
            tbb::blocked_range<long>(0, 20000), 0.0,
            [](const tbb::blocked_range<long> &r, double s) {
                for (long i = r.begin(); i < r.end(); i++) s += step((double)i, 600);
                return s;
            },
            [](double a, double b) { return a + b; });
        usleep(20000);
    }
    printf("%.1f\n", total);
}
