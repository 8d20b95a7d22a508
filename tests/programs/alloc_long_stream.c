/* One thread making millions of small malloc/free pairs, then four short phases of 100,000 pairs
 * each: long enough for the interposer to lengthen its sampling period (struct ss_alloc_thread in
 * preload/alloc.c), with phases that begin after it did. */
#include <stallscope.h>
#include <stdlib.h>

static void pairs(long n) {
    for (long i = 0; i < n; i++) {
        void *volatile p = malloc(16 + (size_t)(i % 7) * 8); /* volatile: the pair must stay */
        free(p);
    }
}

int main(void) {
    pairs(3000000);
    static const char *const names[] = {"first", "second", "third", "fourth"};
    for (int k = 0; k < 4; k++) {
        stallscope_phase_begin(names[k]);
        pairs(100000);
        stallscope_phase_end();
    }
    return 0;
}
