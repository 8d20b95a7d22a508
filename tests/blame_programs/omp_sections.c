// OpenMP `sections`: each section runs on one thread; the team waits for the longest at the
// construct's implicit barrier. Unbalanced: one long section (culprit_section) and one short.
// Balanced: two sections of the same length.
#include <omp.h>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_section(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double section_work(double x, long us) {
    BURN(x, us);
    return x;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double total = 0;
#pragma omp parallel reduction(+ : total)
    for (int round = 0; round < ROUNDS; round++) {
#pragma omp sections
        {
#pragma omp section
            total += unbalanced ? culprit_section(round, 38000) : section_work(round, 34000);
#pragma omp section
            total += section_work(round + 1, unbalanced ? 2000 : 34000);
        }
    }
    printf("%g\n", total);
    return 0;
}
