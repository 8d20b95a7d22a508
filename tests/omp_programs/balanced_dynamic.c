/* The same uneven loop as imbalanced_static.c, scheduled dynamically: the threads take chunks as
 * they finish, so none waits long at the barrier. stallscope should stay quiet about it. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double work(long i, long n) {
    long rounds = i < n / 2 ? 4000 : 400;
    double x = (double)i;
    for (long k = 0; k < rounds; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    double sum = 0;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : sum)
        for (long i = 0; i < n; i++) sum += work(i, n);
    }
    printf("sum %.3f threads %d\n", sum, omp_get_max_threads());
    return 0;
}
