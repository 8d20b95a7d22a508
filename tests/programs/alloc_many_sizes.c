/* Every request size below 1000 bytes but 0, each a short stream: 32 malloc/free pairs of each
 * size, sizes in turn (1, 2, ..., 999, then again), 31968 mallocs in all. The interposer counts
 * small mallocs per size and times each size's calls at random intervals (256 on average), so
 * every stream here is far shorter than an interval: whether its calls are still timed one in 256
 * depends on how each stream's first interval is drawn (tests/run_alloc.rs). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    unsigned long sum = 0;
    for (int round = 0; round < 32; round++)
        for (size_t size = 1; size < 1000; size++) {
            unsigned char *p = malloc(size);
            if (!p) return 1;
            p[0] = (unsigned char)size;
            p[size - 1] = (unsigned char)round;
            sum += p[0];
            free(p);
        }
    return sum == 0; /* never: keeps the loop */
}
