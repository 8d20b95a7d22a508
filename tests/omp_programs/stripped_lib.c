/* An OpenMP loop inside a shared library built without symbols (strip --strip-unneeded), called
 * by stripped_lib_main.c: the region's body has no name, and neither has the library function
 * that calls GOMP_parallel. Correct diagnosis: the master's share of the loop is computation,
 * like the other team member's, not the idle team of the GOMP_parallel further out (it read idle
 * 47%, and its states summed to 147% of its life). */
double work(long n) {
    double s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long i = 0; i < n; i++) s += (double)i / (i + 3.0);
    return s;
}
