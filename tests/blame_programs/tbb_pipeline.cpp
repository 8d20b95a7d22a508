// oneTBB parallel_pipeline: a serial input stage, a parallel stage and a serial_in_order output
// stage, 100 items, 4 tokens. Unbalanced: the serial_in_order stage is the heavy one
// (culprit_stage): one thread at a time runs it while the other waits for a token. Balanced: the
// parallel stage is the heavy one and the serial stages are tiny.
#include <tbb/global_control.h>
#include <tbb/parallel_pipeline.h>
#include "burn.h"

#define ITEMS 100

__attribute__((noinline)) double culprit_stage(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double stage_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
    int next = 0;
    double total = 0;
    tbb::parallel_pipeline(
        4,
        tbb::make_filter<void, int>(tbb::filter_mode::serial_in_order,
                                    [&](tbb::flow_control &fc) {
                                        if (next == ITEMS) fc.stop();
                                        return next++;
                                    }) &
            tbb::make_filter<int, double>(tbb::filter_mode::parallel,
                                          [&](int i) { return stage_work(i, unbalanced ? 300 : 6500); }) &
            tbb::make_filter<double, void>(tbb::filter_mode::serial_in_order, [&](double x) {
                total += unbalanced ? culprit_stage(x, 3500) : stage_work(x, 50);
            }));
    printf("%g\n", total);
    return 0;
}
