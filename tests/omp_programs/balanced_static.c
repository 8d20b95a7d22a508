/* A balanced loop under schedule(static): every iteration costs the same, so every member of the
 * team gets the same work. Run with more threads than CPUs, its members wait at the closing
 * barrier for the ones that waited for a CPU: not load imbalance.
 * Usage: balanced_static [iterations per round=4000000] [rounds=12] */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 4000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 12;
    double total = 0;
    for (int r = 0; r < rounds; r++) {
        double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (long i = 0; i < n; i++) {
            double x = (double)(i % 1000) * 1e-3;
            for (int k = 0; k < 20; k++) x = x * 0.999 + 0.001;
            sum += x;
        }
        total += sum;
    }
    printf("%.3f\n", total);
    return 0;
}
