/* A serial part: the main thread does SERIAL_SHARE of the work alone, then the threads split the
 * rest. Amdahl's serial fraction is SERIAL_SHARE. */
#include <pthread.h>
#include <stdlib.h>

#define WORK 100000000UL
#define SERIAL_PERCENT 40

static unsigned long share;

static unsigned long spin(unsigned long n, unsigned long seed) {
    unsigned long acc = seed;
    for (unsigned long i = 0; i < n; i++)
        acc = acc * 6364136223846793005UL + 1442695040888963407UL;
    return acc;
}

static void *worker(void *arg) {
    volatile unsigned long sink = spin(share, (unsigned long)arg);
    (void)sink;
    return NULL;
}

__attribute__((noinline)) static void prepare(void) {
    volatile unsigned long sink = spin(WORK * SERIAL_PERCENT / 100, 7);
    (void)sink;
}

int main(void) {
    const char *env = getenv("STALLSCOPE_THREADS");
    int n = env ? atoi(env) : 1;
    if (n < 1) n = 1;
    prepare();
    share = WORK * (100 - SERIAL_PERCENT) / 100 / n;
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
