// A table guarded by one of oneTBB's mutexes, under tbb::parallel_for: built with
// -DTBB_USE_PROFILING_TOOLS=1 the mutex reports its acquisitions through ITT, and stallscope (the
// ITT collector of the run) should name it a TBB lock in TBB's words at the user's line.
// argv[1]: queuing (tbb::queuing_mutex, the default) or mutex (tbb::mutex); argv[2]: threads.
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/mutex.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/queuing_mutex.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static tbb::queuing_mutex queue_lock;
static tbb::mutex plain_lock;
static double table[1024];

static double step(double x, int r) {
    for (int k = 0; k < r; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

int main(int argc, char **argv) {
    bool queuing = argc < 2 || strcmp(argv[1], "mutex") != 0;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    tbb::parallel_for(0L, 30000L, [queuing](long i) {
        double v = step((double)i, 200);
        if (queuing) {
            tbb::queuing_mutex::scoped_lock lock(queue_lock); // MARK queuing
            table[i % 1024] = step(table[i % 1024] + v, 800);
        } else {
            tbb::mutex::scoped_lock lock(plain_lock); // MARK mutex
            table[i % 1024] = step(table[i % 1024] + v, 800);
        }
    });
    double s = 0;
    for (double x : table) s += x;
    printf("%.1f\n", s);
}
