/* Closes every descriptor above 2 at start (close_range(3, ~0U, 0), as daemons and sandboxes do),
 * whatever the profiler opened there, then starts threads that allocate and take a lock, opens
 * files and prints the descriptors it got: the same as without stallscope. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *work(void *arg) {
    long n = (long)arg;
    for (int i = 0; i < 20000; i++) {
        char *p = malloc(16 + (size_t)(i % 200));
        p[0] = (char)i;
        pthread_mutex_lock(&lock);
        total += p[0] == (char)i;
        pthread_mutex_unlock(&lock);
        free(p);
    }
    return (void *)n;
}

int main(void) {
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
        printf("close_range unsupported\n");
        return 0;
    }
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
    printf("total %ld, descriptors %d %d\n", total, a, b);
    fflush(stdout);
    /* Closed again after the threads ran (the profiler's files, if any, are gone once more). */
    syscall(SYS_close_range, 3u, ~0u, 0u);
    char *p = malloc(100);
    free(p);
    int c = open("/dev/null", O_RDONLY);
    printf("after the second close_range: %d\n", c);
    return 0;
}
