/* Allocates steadily (100 malloc(64) + free every millisecond) and kills itself with SIGKILL after
 * about 2.5 seconds, so that the profiler's periodic flush has run at least twice. With the
 * argument "forever" it never stops by itself (the test kills it from outside). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int forever = argc > 1 && strcmp(argv[1], "forever") == 0;
    double start = now();
    while (forever || now() - start < 2.5) {
        for (int i = 0; i < 100; i++) {
            char *p = malloc(64);
            memset(p, i, 64);
            sink += (unsigned char)p[63];
            free(p);
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    raise(SIGKILL);
    return 0;
}
