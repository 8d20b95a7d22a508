/* Arithmetic only: no allocation, no locks. */
#include <pthread.h>
#include <stdio.h>

static void *spin(void *arg) {
    volatile double x = 1.0;
    for (long i = 0; i < 150000000; i++) x = x * 1.0000001 + 1e-9;
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, spin, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
