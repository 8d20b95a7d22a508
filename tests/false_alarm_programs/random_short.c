// A short program (about 80 ms): two threads draw from random(), whose state is behind one lock
// inside glibc, so they wait for each other most of their lives.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long iterations = 5000000;

static void *draw(void *arg) {
    (void)arg;
    long sum = 0;
    for (long i = 0; i < iterations; i++)
        sum += random() & 1;
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc > 1)
        iterations = atol(argv[1]);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, draw, NULL);
    long total = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(threads[i], &r);
        total += (long)r;
    }
    printf("%ld\n", total);
    return 0;
}
