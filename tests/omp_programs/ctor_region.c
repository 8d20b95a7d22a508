/* A library whose constructor runs OpenMP parallel regions (as a library may that sets up its
 * tables on load): the team members take a named critical section, omp locks and a dynamic loop
 * while the thread that loads the library holds the dynamic loader's lock, and waits for them at
 * the regions' ends. ctor_region_main.c loads it with dlopen.
 * CTOR_ITEMS: the named critical section's acquisitions (default 400). */
#include <omp.h>
#include <stdlib.h>

static long total;

__attribute__((constructor)) static void set_up(void) {
    const char *env = getenv("CTOR_ITEMS");
    int items = env ? atoi(env) : 400;
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
#pragma omp parallel num_threads(2)
    {
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < items; i++) {
#pragma omp critical(ctor_table)
            total += i;
        }
        omp_set_lock(&lock);
        total += 1;
        omp_unset_lock(&lock);
        omp_set_nest_lock(&nest);
        omp_set_nest_lock(&nest);
        total += omp_get_thread_num() >= 0;
        omp_unset_nest_lock(&nest);
        omp_unset_nest_lock(&nest);
#pragma omp barrier
#pragma omp single
        total += 1000000;
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
}

long ctor_total(void) { return total; }
