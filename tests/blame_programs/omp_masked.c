// OpenMP `masked` (OpenMP 5.1's `master`: GCC 12 and clang 14 take it) followed by an explicit `barrier`: the primary
// thread runs the masked block while the others wait at the barrier. Unbalanced: the masked block
// is the heavy part of each round (culprit_masked). Balanced: it is tiny and a worksharing loop
// shares the round's work.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_masked(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double shared_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    for (int round = 0; round < ROUNDS; round++) {
#pragma omp masked
        total += unbalanced ? culprit_masked(round, 30000) : shared_work(round, 200);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int i = 0; i < 8; i++) total += shared_work(i, unbalanced ? 2500 : 8500);
    }
    printf("%g\n", total);
    return 0;
}
