/* Scales: each thread sums its own share of a fixed amount of work in a local variable. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORK 200000000UL /* about 0.3 s on one thread */

static unsigned long share;

static void *worker(void *arg) {
    volatile unsigned long x = (unsigned long)arg;
    unsigned long acc = x;
    for (unsigned long i = 0; i < share; i++)
        acc = acc * 6364136223846793005UL + 1442695040888963407UL;
    x = acc;
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (n < 1) n = 1;
    share = WORK / n;
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
