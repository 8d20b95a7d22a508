// oneTBB parallel_invoke of two functions, in rounds. Unbalanced: one long (culprit_invoke), one
// short: one thread runs the long one while the other waits for it. Balanced: two of the same
// length.
#include <tbb/global_control.h>
#include <tbb/parallel_invoke.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_invoke(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double invoke_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 2);
    double total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        double a = 0, b = 0;
        tbb::parallel_invoke(
            [&] { a = unbalanced ? culprit_invoke(round, 33000) : invoke_work(round, 33000); },
            [&] { b = invoke_work(round + 1, unbalanced ? 3000 : 33000); });
        total += a + b;
    }
    printf("%g\n", total);
    return 0;
}
