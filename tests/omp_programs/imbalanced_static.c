/* An OpenMP loop with schedule(static) and uneven work per item: the first half of the items cost
 * far more than the second, so the thread given the first half works while the other waits at
 * the loop's implicit barrier. The cause is load imbalance in the user's loop, never a lock. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double work(long i, long n) {
    long rounds = i < n / 2 ? 4000 : 400; /* uneven: the first half costs 10x */
    double x = (double)i;
    for (long k = 0; k < rounds; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    double sum = 0;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static) reduction(+ : sum)
        for (long i = 0; i < n; i++) sum += work(i, n); /* MARK loop */
    }
    printf("sum %.3f threads %d\n", sum, omp_get_max_threads());
    return 0;
}
