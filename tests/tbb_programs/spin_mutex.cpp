// tbb::spin_mutex around real work under tbb::parallel_for: TBB's spin mutex is inline header
// code that pauses, then yields (sched_yield). stallscope should name the spinning at the user's
// line, and never call the yields' system time page faults.
#include <tbb/parallel_for.h>
#include <tbb/spin_mutex.h>
#include <tbb/global_control.h>
#include <cstdio>
#include <cstdlib>
static tbb::spin_mutex table_mutex;
static double table[1024];
static double step(double x, int r) { for (int k = 0; k < r; k++) x = x * 1.0000001 + 0.5 / (x + 1.0); return x; }
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
    tbb::parallel_for(0L, 40000L, [](long i) {
        double v = step((double)i, 200);
        tbb::spin_mutex::scoped_lock lock(table_mutex);
        table[i % 1024] = step(table[i % 1024] + v, 800); // MARK critical
    });
    double s = 0; for (double x : table) s += x;
    printf("%.1f\n", s);
}
