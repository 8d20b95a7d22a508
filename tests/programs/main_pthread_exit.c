/* main returns through pthread_exit while a worker goes on: the worker sleeps 200 ms, makes
 * exactly 500 malloc(56) and their frees, and returns; the process then ends with status 0 when
 * its last thread ends. With the argument "empty" the worker allocates nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int empty;
static volatile unsigned long sink;

static void *worker(void *arg) {
    (void)arg;
    struct timespec ts = {0, 200000000};
    nanosleep(&ts, NULL);
    if (empty) return NULL;
    for (int i = 0; i < 500; i++) {
        char *p = malloc(56);
        memset(p, i, 56);
        sink += (unsigned char)p[55];
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    empty = argc > 1 && strcmp(argv[1], "empty") == 0;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 10;
    pthread_exit(NULL);
}
