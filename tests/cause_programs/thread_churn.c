/* A thread per task: every small task gets its own pthread_create + pthread_join (the shape of
 * std::async(std::launch::async) per item), two tasks in flight at a time.
 *
 * Demonstrates: thread churn. Each task computes a few microseconds; creating, starting, ending and
 * joining its thread (clone, stack mapping, exit) costs more than the task. Correct diagnosis:
 * thread churn, tens of thousands of threads a second living tens of microseconds each, created
 * from spawn_tasks (thread_churn.c); remedy: a pool of threads taking tasks from a queue.
 * Usage: thread_churn [in flight=2] [tasks=40000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *task(void *arg) {
    unsigned long x = (unsigned long)arg, s = 0;
    for (int k = 0; k < 300; k++) s += (x ^ (unsigned long)k) * 2654435761u;
    return (void *)s;
}

__attribute__((noinline)) static unsigned long spawn_tasks(long tasks, int width) {
    pthread_t t[64];
    unsigned long total = 0;
    for (long i = 0; i < tasks; i += width) {
        for (int j = 0; j < width; j++) pthread_create(&t[j], NULL, task, (void *)(i + j));
        for (int j = 0; j < width; j++) {
            void *r;
            pthread_join(t[j], &r);
            total += (unsigned long)r;
        }
    }
    return total;
}

int main(int argc, char **argv) {
    int width = argc > 1 ? atoi(argv[1]) : 2;
    long tasks = argc > 2 ? atol(argv[2]) : 40000;
    if (width < 1) width = 1;
    if (width > 64) width = 64;
    printf("total %lu\n", spawn_tasks(tasks, width));
    return 0;
}
