// OpenMP `task` + `taskwait`: one thread creates a round's tasks and waits for them; the team runs
// them. Unbalanced: one long task (culprit_task) and four short ones, so one thread runs the long
// task while the other waits. Balanced: eight tasks of the same length.
#include <omp.h>
#include "burn.h"

#define ROUNDS 12

__attribute__((noinline)) double culprit_task(double x, long us) {
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
        if (unbalanced) {
#pragma omp task shared(out)
            out[0] = culprit_task(round, 30000);
            for (int k = 1; k < 5; k++) {
#pragma omp task shared(out) firstprivate(k)
                out[k] = task_work(k, 1000);
            }
            for (int k = 5; k < 8; k++) out[k] = 0;
        } else {
            for (int k = 0; k < 8; k++) {
#pragma omp task shared(out) firstprivate(k)
                out[k] = task_work(k, 7000);
            }
        }
#pragma omp taskwait
        for (int k = 0; k < 8; k++) total += out[k];
    }
    printf("%g\n", total);
    return 0;
}
