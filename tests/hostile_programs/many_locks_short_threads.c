/* 300 short threads, one after another, each taking 300 of 600 mutexes (a different 300 each
 * time): the short threads are folded into one group, whose lock table (256 locks) overflows, as
 * does each thread's own. Prints how many acquisitions there were. (The group's overflow entry
 * once counted a thread once per lock that overflowed: a group of 236 threads said thousands took
 * it, and the reader refused the profile as damaged.) */
#include <pthread.h>
#include <stdio.h>

#define LOCKS 600
#define TAKEN 300
#define THREADS 300

static pthread_mutex_t locks[LOCKS];
static unsigned long acquisitions;

static void *worker(void *arg) {
    unsigned long k = (unsigned long)arg;
    for (unsigned long i = 0; i < TAKEN; i++) {
        pthread_mutex_t *m = &locks[(k * 7 + i * 2) % LOCKS];
        pthread_mutex_lock(m);
        __atomic_add_fetch(&acquisitions, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(m);
    }
    return NULL;
}

int main(void) {
    for (int i = 0; i < LOCKS; i++) pthread_mutex_init(&locks[i], NULL);
    for (unsigned long k = 0; k < THREADS; k++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)k) != 0) return 1;
        pthread_join(t, NULL);
    }
    printf("%lu acquisitions\n", acquisitions);
    return 0;
}
