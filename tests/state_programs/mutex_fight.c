/* Two threads fighting over one pthread mutex, with some work inside the critical section. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t counter;

static void *fight(void *arg) {
    for (int i = 0; i < 1500000; i++) {
        pthread_mutex_lock(&shared);
        for (int k = 0; k < 20; k++) counter = counter * 6364136223846793005ull + (uint64_t)k;
        pthread_mutex_unlock(&shared);
    }
    return NULL;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, fight, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
