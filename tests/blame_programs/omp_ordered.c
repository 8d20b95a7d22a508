// OpenMP `ordered` loop: the ordered block of each iteration runs in iteration order, one thread
// at a time. Unbalanced: the ordered block is the heavy part of each iteration (culprit_ordered),
// so the loop runs serially. Balanced: the heavy part is outside the ordered block, which is tiny.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_ordered(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double unordered_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    for (int round = 0; round < ROUNDS; round++) {
#pragma omp for ordered schedule(static, 1)
        for (int i = 0; i < 8; i++) {
            double x = unordered_work(i, unbalanced ? 500 : 8000);
#pragma omp ordered
            total += unbalanced ? culprit_ordered(x, 4000) : unordered_work(x, 50);
        }
    }
    printf("%g\n", total);
    return 0;
}
