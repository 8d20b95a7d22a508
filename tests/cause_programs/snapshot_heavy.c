/* Clean case for the profiler's own work: heap snapshots on a heap with many free chunks, taken
 * by main while no other thread runs, before a parallel part that scales.
 *
 * Demonstrates: stallscope's own work is not the program's. main keeps 200,000 small blocks and
 * frees every other one (100,000 free chunks in glibc's bins), then asks for `snapshots` heap
 * snapshots (include/stallscope.h): each walks the heap (mallinfo2, malloc_info), which takes
 * main alone for a large share of the run. Then two workers compute in parallel.
 * Correct diagnosis: main's snapshot time is in state `profiler` (most of its life before the
 * workers start); NO serial-section or page-fault finding names the snapshot (int_mallinfo,
 * mallinfo2, malloc_info) and no medium or high finding at all: without stallscope that time
 * does not exist. Usage: snapshot_heavy [threads=2] [snapshots=40] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stallscope.h>
#include "truth.h"

static void *blocks[200000];

static double results[64];

static void *worker(void *arg) {
    truth_start();
    long id = (long)arg;
    double x = (double)id;
    for (long k = 0; k < 150000000; k++) x = x * 0.9999999 + 1e-7;
    results[id] = x;
    truth_end("worker");
    return NULL;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    long snapshots = arg_or(argc, argv, 2, 40);
    if (threads > 64) threads = 64;
    for (long i = 0; i < 200000; i++) blocks[i] = malloc(16 + (size_t)(i % 7) * 16);
    for (long i = 0; i < 200000; i += 2) free(blocks[i]);
    for (long i = 0; i < snapshots; i++) stallscope_heap_snapshot("walk");
    pthread_t t[64];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double total = 0;
    for (int i = 0; i < threads; i++) total += results[i];
    printf("total %f\n", total);
    truth_end("main");
    return 0;
}
