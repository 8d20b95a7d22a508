// OpenMP `taskgroup`: the end of the group waits for its tasks and their descendants. Unbalanced:
// one long task (culprit_taskgroup, a child task of a short one) among short ones, so one thread
// runs it while the other waits at the group's end. Balanced: eight tasks of the same length.
#include <omp.h>
#include "burn.h"

#define ROUNDS 12

__attribute__((noinline)) double culprit_taskgroup(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double task_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
    double out[8];
#pragma omp parallel
#pragma omp single
    for (int round = 0; round < ROUNDS; round++) {
#pragma omp taskgroup
        {
            if (unbalanced) {
#pragma omp task shared(out)
                {
                    out[1] = task_work(round, 500);
#pragma omp task shared(out)
                    out[0] = culprit_taskgroup(round, 30000);
                }
                for (int k = 2; k < 6; k++) {
#pragma omp task shared(out) firstprivate(k)
                    out[k] = task_work(k, 1000);
                }
                for (int k = 6; k < 8; k++) out[k] = 0;
            } else {
                for (int k = 0; k < 8; k++) {
#pragma omp task shared(out) firstprivate(k)
                    out[k] = task_work(k, 7000);
                }
            }
        }
        for (int k = 0; k < 8; k++) total += out[k];
    }
    printf("%g\n", total);
    return 0;
}
