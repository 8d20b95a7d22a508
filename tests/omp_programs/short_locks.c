/* Short OpenMP critical sections and locks, every kind the hooks know: an omp lock, an omp nest
 * lock (taken twice, nested), the unnamed critical section and a named one, each taken N times
 * around a few additions. With one thread nothing is ever found held: stallscope must count every
 * acquisition and no wait (a single thread's acquisitions that an interrupt stretched had read as
 * contended, and its time inside them as lock waits). With two, the bench's case of many short
 * acquisitions (benches/overhead.sh ompcrit). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    long a = 0, b = 0, c = 0, d = 0;
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
#pragma omp parallel for schedule(static) reduction(+ : d)
    for (long i = 0; i < n; i++) {
        omp_set_lock(&lock);
        a += i & 7;
        omp_unset_lock(&lock);
        omp_set_nest_lock(&nest);
        omp_set_nest_lock(&nest);
        b += i & 3;
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
#pragma omp critical
        c += i & 1;
#pragma omp critical(tally)
        d += 1;
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    printf("a %ld b %ld c %ld d %ld threads %d\n", a, b, c, d, omp_get_max_threads());
    return 0;
}
