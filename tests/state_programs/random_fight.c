/* Two threads hammering random(): glibc serializes it with an internal lock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *roll(void *arg) {
    long sum = 0;
    for (int i = 0; i < 6000000; i++) sum += random() & 1;
    return (void *)sum;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, roll, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
