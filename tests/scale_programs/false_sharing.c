/* False sharing: each thread bumps its own counter, but the counters share one cache line. No
 * lock, no atomic instruction: only the line moving between cores makes two threads slower. */
#include <pthread.h>
#include <stdlib.h>

#define WORK 100000000UL

static volatile unsigned long counters[8]; /* 64 bytes: one line */
static unsigned long share;

__attribute__((noinline)) static void bump_counter(int slot) {
    for (unsigned long i = 0; i < share; i++)
        counters[slot]++;
}

static void *worker(void *arg) {
    bump_counter((int)(long)arg);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    if (n < 1 || n > 8) n = 1;
    share = WORK / n;
    pthread_t t[8];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return 0;
}
