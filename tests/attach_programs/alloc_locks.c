/* A program to attach to: four threads allocate, free and take a shared mutex in rounds, with a
 * short sleep between rounds, so that it runs a few seconds whatever the machine's speed; the
 * work (and so its output) is fixed. Prints "ready" once its threads run, and a checksum at the
 * end. argv[1]: rounds (default 300). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long total;
static int rounds = 300;

static void *worker(void *arg) {
    unsigned long long id = (unsigned long long)(size_t)arg, local = 0;
    static __thread unsigned char *keep[64];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2000; i++) {
            size_t n = 16 + (size_t)((i * 7 + id) % 200);
            unsigned char *p = malloc(n);
            memset(p, (int)(i & 0xff), n);
            local += p[n - 1];
            free(keep[i % 64]); /* blocks live a while: the allocator is really called */
            keep[i % 64] = p;
            if (i % 8 == 0) {
                pthread_mutex_lock(&lock);
                total += 1;
                pthread_mutex_unlock(&lock);
            }
        }
        usleep(10000);
    }
    for (int i = 0; i < 64; i++) free(keep[i]);
    pthread_mutex_lock(&lock);
    total += local;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atoi(argv[1]);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(size_t)i);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("total %llu\n", total);
    return 3;
}
