/* The C API of include/stallscope.h: nested phases on two threads and a labelled snapshot. Its
 * output is the same with and without stallscope. */
#include <pthread.h>
#include <stallscope.h>
#include <stdio.h>
#include <stdlib.h>

static void *worker(void *arg) {
    (void)arg;
    stallscope_phase_begin("worker");
    for (int i = 0; i < 1000; i++) {
        void *volatile p = malloc(64); /* volatile: the pair must not be optimised away */
        free(p);
    }
    stallscope_phase_end();
    return NULL;
}

int main(void) {
    stallscope_phase_begin("outer");
    stallscope_phase_begin("inner");
    void *volatile p = malloc(100);
    free(p);
    stallscope_phase_end();
    stallscope_heap_snapshot("between");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    stallscope_phase_end();
    stallscope_phase_end(); /* one end too many: ignored */
    puts("phases done");
    return 0;
}
