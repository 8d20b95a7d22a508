/* An event on a raw futex word: a producer posts items one at a time and wakes a consumer that
 * sleeps on the word between them. The consumer waits for an event, not for a lock: stallscope
 * must count its sleeps as blocked, never as lock contention. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int posted; /* items posted, never taken back */
static long items = 400;

static void *consumer(void *arg) {
    (void)arg;
    long seen = 0;
    while (seen < items) {
        int now = atomic_load(&posted);
        if (now == seen) {
            syscall(SYS_futex, &posted, FUTEX_WAIT_PRIVATE, now, NULL, NULL, 0);
            continue;
        }
        seen = now;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) items = atol(argv[1]);
    pthread_t c;
    pthread_create(&c, NULL, consumer, NULL);
    struct timespec pause = {0, 500000};
    for (long i = 0; i < items; i++) {
        nanosleep(&pause, NULL);
        atomic_fetch_add(&posted, 1);
        syscall(SYS_futex, &posted, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
    pthread_join(c, NULL);
    printf("posted %d\n", atomic_load(&posted));
    return 0;
}
