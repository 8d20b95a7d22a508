/* The imbalanced loop of imbalanced_static.c inside a function that the compiler inlines into an
 * unrolled caller: one pragma, copied four times. Its region must be one, named by the function
 * that holds the pragma and the pragma's line. */
#include <stdio.h>
#include <stdlib.h>

static double work(long i, long n) {
    long rounds = i < n / 2 ? 4000 : 400; /* uneven: the first half costs 10x */
    double x = (double)i;
    for (long k = 0; k < rounds; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

static inline double step(long n) {
    double sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (long i = 0; i < n; i++) sum += work(i, n);
    return sum;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    double s = 0;
    for (int r = 0; r < 4; r++) s += step(n);
    printf("sum %.3f\n", s);
    return 0;
}
