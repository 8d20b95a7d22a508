// Two threads computing independently: nothing to find, even when other load on the machine
// stretches their wall time far beyond their CPU time.
#include <pthread.h>
#include <stdio.h>

static void *integrate(void *arg) {
    double sum = 0.0;
    for (long i = 0; i < 60000000L; i++)
        sum += (double)i * 1e-9 / (1.0 + (double)(i & 7));
    *(double *)arg = sum;
    return NULL;
}

int main(void) {
    pthread_t a, b;
    double x = 0.0, y = 0.0;
    pthread_create(&a, NULL, integrate, &x);
    pthread_create(&b, NULL, integrate, &y);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%f\n", x + y);
    return 0;
}
