/* Holds of known, skewed lengths: one thread takes a mutex N times; 19 holds in 20 spin about
 * 50 ns, one in 20 about 5 us (the long holds are 5% of the acquisitions and most of the held
 * time, so a hold-time estimate from a sample has something to miss).
 *   lock_holds [N=20000]
 * Prints the held time it measured itself (every hold timed with the monotonic clock). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spins about `ns` nanoseconds (the loop reads the clock, so its length is time, not a count). */
static void spin_for(uint64_t ns) {
    uint64_t end = now_ns() + ns;
    while (now_ns() < end) sink++;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    uint64_t x = 88172645463325252ull, held = 0;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t length = x % 20 == 0 ? 5000 : 50;
        pthread_mutex_lock(&lock);
        uint64_t start = now_ns();
        spin_for(length);
        held += now_ns() - start;
        pthread_mutex_unlock(&lock);
    }
    printf("lock_holds: %ld holds, %llu ns held (measured in the program)\n", n, (unsigned long long)held);
    return 0;
}
