/* A named OpenMP critical section around real work: the threads take turns in it. stallscope
 * must call it a critical section, named, at the user's line: never anonymous spinning in libgomp
 * or a lock inside the C library. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double table[1024];

static double step(double x, int rounds) {
    for (int k = 0; k < rounds; k++) x = x * 1.0000001 + 0.5 / (x + 1.0);
    return x;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 40000;
    double total = 0;
#pragma omp parallel for schedule(dynamic, 64)
    for (long i = 0; i < n; i++) {
        double v = step((double)i, 200);
#pragma omp critical(table_update)
        {
            table[i % 1024] = step(table[i % 1024] + v, 800); /* MARK critical */
        }
    }
    for (int i = 0; i < 1024; i++) total += table[i];
    printf("total %.3f threads %d\n", total, omp_get_max_threads());
    return 0;
}
