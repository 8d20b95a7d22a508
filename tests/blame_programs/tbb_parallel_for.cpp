// oneTBB parallel_for over 64 items, in rounds. Unbalanced: one item (culprit_heavy_item) costs as
// much as three quarters of the round: the thread that takes it runs it while the other, done with
// the rest, waits for the algorithm to end. Balanced: every item costs the same.
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include "burn.h"

#define ROUNDS 12
#define ITEMS 64

__attribute__((noinline)) double culprit_heavy_item(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double item_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
    double out[ITEMS] = {0}, total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        tbb::parallel_for(tbb::blocked_range<int>(0, ITEMS, 1), [&](const tbb::blocked_range<int> &r) {
            for (int i = r.begin(); i < r.end(); i++)
                out[i] = unbalanced && i == 0 ? culprit_heavy_item(i, 30000)
                                              : item_work(i, unbalanced ? 150 : 850);
        });
        for (double x : out) total += x;
    }
    printf("%g\n", total);
    return 0;
}
