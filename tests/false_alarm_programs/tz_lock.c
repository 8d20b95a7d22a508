// Two threads convert times in a loop: localtime() and mktime() take glibc's timezone lock
// (tzset_lock), so while one thread holds it the other waits for it. The wait is the lock's
// cost; no stretch of the run is serial work.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long iterations = 400000;

static void *convert(void *arg) {
    time_t t = (time_t)(long)arg;
    long sum = 0;
    for (long i = 0; i < iterations; i++) {
        struct tm *tm = localtime(&t);
        struct tm copy = *tm;
        sum += mktime(&copy) & 1;
        t += 3600;
    }
    return (void *)sum;
}

int main(int argc, char **argv) {
    if (argc > 1)
        iterations = atol(argv[1]);
    setenv("TZ", "Europe/Berlin", 1);
    tzset();
    pthread_t threads[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, convert, (void *)(1700000000L + i * 86400L));
    long total = 0;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(threads[i], &r);
        total += (long)r;
    }
    printf("%ld\n", total);
    return 0;
}
