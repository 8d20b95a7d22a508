// oneTBB task_group: run() a round's tasks, wait() for them. Unbalanced: one long task
// (culprit_long_task) and four short ones: one thread runs the long task while the other waits.
// Balanced: eight tasks of the same length.
#include <tbb/global_control.h>
#include <tbb/task_group.h>
#include "burn.h"

#define ROUNDS 12

__attribute__((noinline)) double culprit_long_task(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double task_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
    double out[8] = {0}, total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        tbb::task_group g;
        if (unbalanced) {
            g.run([&] { out[0] = culprit_long_task(round, 30000); });
            for (int k = 1; k < 5; k++) g.run([&, k] { out[k] = task_work(k, 1000); });
        } else {
            for (int k = 0; k < 8; k++) g.run([&, k] { out[k] = task_work(k, 7000); });
        }
        g.wait();
        for (double x : out) total += x;
    }
    printf("%g\n", total);
    return 0;
}
