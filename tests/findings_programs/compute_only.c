// A compute-only loop: no allocation, no lock. It must get no finding.
#include <stdio.h>

static double __attribute__((noinline)) integrate(long steps) {
    double sum = 0.0;
    for (long i = 0; i < steps; i++) {
        double x = (double)i / (double)steps;
        sum += x * x / (1.0 + x);
    }
    return sum;
}

int main(void) {
    printf("%f\n", integrate(200000000L));
    return 0;
}
