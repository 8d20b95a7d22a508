// OpenMP `for nowait` followed by an explicit `barrier`: the loop has no barrier of its own, the
// team waits at the next one. Unbalanced: with a static schedule the first half of the iterations
// (the first thread's) are heavy (culprit_nowait_iter). Balanced: every iteration costs the same.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_nowait_iter(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double iter_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    for (int round = 0; round < ROUNDS; round++) {
#pragma omp for schedule(static) nowait
        for (int i = 0; i < 16; i++) {
            if (!unbalanced)
                total += iter_work(i, 4000);
            else if (i < 8)
                total += culprit_nowait_iter(i, 4000);
            else
                total += iter_work(i, 250);
        }
#pragma omp barrier
    }
    printf("%g\n", total);
    return 0;
}
