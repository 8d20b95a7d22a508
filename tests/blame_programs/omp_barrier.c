// OpenMP explicit `barrier` after uneven per-thread work. Unbalanced: the last thread of the team
// (a worker, not the primary) does the heavy part (culprit_barrier) while the others do little
// and wait at the barrier. Balanced: every thread does the same work.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_barrier(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double own_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
        int last = omp_get_thread_num() == omp_get_num_threads() - 1;
        for (int round = 0; round < ROUNDS; round++) {
            if (!unbalanced)
                total += own_work(round, 32000);
            else if (last)
                total += culprit_barrier(round, 32000);
            else
                total += own_work(round, 2000);
#pragma omp barrier
        }
    }
    printf("%g\n", total);
    return 0;
}
