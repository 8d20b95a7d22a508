/* Many tiny OpenMP regions: a parallel loop of a few hundred cheap iterations inside a serial
 * loop run thousands of times. Each region's fork and join cost as much as its work. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20000;
    double a[256];
    for (int i = 0; i < 256; i++) a[i] = i;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 256; i++) a[i] = a[i] * 0.999 + 1.0; /* MARK small */
    }
    double s = 0;
    for (int i = 0; i < 256; i++) s += a[i];
    printf("%.3f threads %d\n", s, omp_get_max_threads());
    return 0;
}
