/* Overhead case (b): two threads taking and releasing one shared pthread mutex 5 million times in
 * total (2.5 million each), with a short critical section. Prints the final counter. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define TOTAL 5000000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counter;

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < TOTAL / 2; i++) {
        pthread_mutex_lock(&lock);
        counter = counter * 3 + 1;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0) return 1;
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)counter);
    return 0;
}
