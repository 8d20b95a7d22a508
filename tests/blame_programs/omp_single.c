// OpenMP `single`: one thread of the team runs the single block while the others wait at its
// implicit barrier. Unbalanced: the single block is the heavy part of each round (culprit_single).
// Balanced: the single block is tiny and the round's work is shared by a worksharing loop.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_single(double x, long us) {
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
#pragma omp single
        total += unbalanced ? culprit_single(round, 30000) : shared_work(round, 200);
#pragma omp for schedule(static)
        for (int i = 0; i < 8; i++) total += shared_work(i, unbalanced ? 2500 : 8500);
    }
    printf("%g\n", total);
    return 0;
}
