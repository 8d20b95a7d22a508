/* Threads that malloc a 64 MiB scratch buffer, fill it, use it and free it, every iteration.
 *
 * Demonstrates: kernel memory work. glibc serves 64 MiB with mmap (above any mmap threshold) and
 * gives it back with munmap on free, so every iteration faults in 16,384 fresh 4 KiB pages
 * (the kernel zeroes each one) and unmaps them again; munmap and the page faults also take the
 * process's mmap lock, which the threads share. Most of the time is system time, not the
 * program's computation.
 * Correct diagnosis: page faults / kernel memory work (minor faults ~16,400 per iteration per
 * thread, system time most of the CPU time), at fill_buffer (big_buffers.c, the memset) and
 * mmap/munmap under malloc/free in work_step. Remedy: keep and reuse the buffer (allocate once
 * per thread), or raise M_MMAP_THRESHOLD / M_TRIM_THRESHOLD so freed memory stays mapped.
 * NOT "compute" with a small kernel-memory share.
 * Usage: big_buffers [threads=2] [total iterations=32] [MiB per buffer=64] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "truth.h"

static long iterations;
static size_t bytes;

__attribute__((noinline)) static void fill_buffer(unsigned char *b, int v) { memset(b, v, bytes); }

__attribute__((noinline)) static unsigned long work_step(int i) {
    unsigned char *b = malloc(bytes);
    fill_buffer(b, i);
    unsigned long sum = 0;
    for (size_t k = 0; k < bytes; k += 4096) sum += b[k]; /* a light use of it */
    free(b);
    return sum;
}

static void *worker(void *arg) {
    (void)arg;
    truth_start();
    unsigned long sum = 0;
    for (long i = 0; i < iterations; i++) sum += work_step((int)i);
    truth_end("worker");
    return (void *)sum;
}

int main(int argc, char **argv) {
    truth_start();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    iterations = arg_or(argc, argv, 2, 32) / threads;
    bytes = (size_t)arg_or(argc, argv, 3, 64) << 20;
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
