/* A plugin that uses OpenMP (reload_main.c opens it, runs it and closes it, more than once):
 * a parallel loop around an unnamed and a named critical section, and an omp lock. Run with
 * OMP_NUM_THREADS=1: libgomp's pool threads would run its code while the unload takes it away
 * (a plugin that unloads libgomp after a team ran crashes without stallscope too). */
#include <omp.h>

long plugin_run(int n) {
    long total = 0, named = 0;
#pragma omp parallel
    {
#pragma omp for
        for (int i = 0; i < n; i++) {
#pragma omp critical
            total += i;
#pragma omp critical(plugin_named)
            named += 1;
        }
        omp_lock_t lock;
        omp_init_lock(&lock);
        omp_set_lock(&lock);
        omp_unset_lock(&lock);
        omp_destroy_lock(&lock);
    }
    return total + named;
}

/* `n` regions whose body ends with an unnamed critical section: GCC ends the outlined body with a
 * tail call of GOMP_critical_end, whose return address is then the body's caller's (the
 * runtime's, or the trampoline stallscope runs bodies through). */
long plugin_tail(int n) {
    long total = 0;
    for (int k = 0; k < n; k++) {
#pragma omp parallel
        {
#pragma omp critical
            total += 1;
        }
    }
    return total;
}
