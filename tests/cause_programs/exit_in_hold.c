/* A condition wait whose mutex is never released: the main thread waits on a condition variable
 * until a worker signals it, then calls exit() still holding the mutex (or, with "thread", a
 * second thread does the same and ends holding it). The profile must still hold that wait: the
 * interposer records a condition wait after the release of its mutex (docs/WAITFOR.md), or at
 * the thread's end or exit when there is none.
 * Usage: exit_in_hold [main|thread] */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t held_at_exit = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static int signalled;

static void *signaller(void *arg) {
    (void)arg;
    usleep(30000); /* the waiter is asleep by now */
    pthread_mutex_lock(&held_at_exit);
    signalled = 1;
    pthread_cond_signal(&ready);
    pthread_mutex_unlock(&held_at_exit);
    return NULL;
}

static void wait_for_signal(void) {
    pthread_mutex_lock(&held_at_exit);
    while (!signalled) pthread_cond_wait(&ready, &held_at_exit);
    /* still held: never released */
}

static void *waiter(void *arg) {
    (void)arg;
    wait_for_signal();
    return NULL;
}

int main(int argc, char **argv) {
    int in_thread = argc > 1 && strcmp(argv[1], "thread") == 0;
    pthread_t s, w;
    if (pthread_create(&s, NULL, signaller, NULL) != 0) return 1;
    if (in_thread) {
        if (pthread_create(&w, NULL, waiter, NULL) != 0) return 1;
        pthread_join(w, NULL);
        pthread_join(s, NULL);
        return 0;
    }
    wait_for_signal();
    exit(0); /* no other wait first (a join's record would push the pending one) */
}
