/* Overhead case (c): a compute-bound loop (about 1 s), no allocation and no locks. */
#include <stdint.h>
#include <stdio.h>

int main(void) {
    uint64_t x = 88172645463325252ull, sum = 0;
    for (long i = 0; i < 500000000L; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sum += x >> 60;
    }
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}
