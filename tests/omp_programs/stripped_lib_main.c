/* Calls the OpenMP loop of the stripped library stripped_lib.c `rounds` times.
 * Usage: stripped_lib_main [rounds=20] [iterations=20000000] */
#include <stdio.h>
#include <stdlib.h>

double work(long n);

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    long n = argc > 2 ? atol(argv[2]) : 20000000;
    double t = 0;
    for (int r = 0; r < rounds; r++) t += work(n);
    printf("%.3f\n", t);
    return 0;
}
