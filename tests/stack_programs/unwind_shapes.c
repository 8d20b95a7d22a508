/* Allocations under frames of every shape an unwinder meets in C code built with -O2 (frame
 * pointers omitted): a variable-length array (the CFA follows rbp), an over-aligned local (a
 * realigned stack), a recursion deeper than the 64 frames a stack keeps, a call through a
 * function pointer, a signal handler (the kernel's signal frame below it), and threads (the
 * interposer's own start trampoline below them). Prints a checksum. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void *leaf_alloc(size_t n) {
    void *p = malloc(n);
    if (!p) abort();
    memset(p, 1, n < 16 ? n : 16);
    return p;
}

__attribute__((noinline)) static void with_vla(int n) {
    char vla[n];
    memset(vla, n, (size_t)n);
    void *p = leaf_alloc((size_t)n + (size_t)vla[n / 2]);
    sink += (uintptr_t)p & 1;
    free(p);
}

__attribute__((noinline)) static void with_aligned(int n) {
    _Alignas(64) char buf[256];
    memset(buf, n, sizeof buf);
    void *p = leaf_alloc((size_t)n + (size_t)buf[n & 255]);
    sink += (uintptr_t)buf & 63;
    free(p);
}

__attribute__((noinline)) static int deep(int depth) {
    if (depth == 0) {
        free(leaf_alloc(40));
        return 1;
    }
    return deep(depth - 1) + (int)(sink & 1);
}

static void *(*volatile indirect)(size_t) = leaf_alloc;

static void on_signal(int sig) {
    free(indirect(24 + (size_t)sig));
}

static void *worker(void *arg) {
    for (int i = 0; i < 2000; i++) {
        with_vla(16 + (int)(uintptr_t)arg + (i & 7));
        with_aligned(32 + (i & 15));
    }
    return NULL;
}

int main(void) {
    signal(SIGUSR1, on_signal);
    for (int i = 0; i < 2000; i++) {
        with_vla(8 + (i & 31));
        with_aligned(i & 63);
        free(indirect(100));
        if (i % 100 == 0) deep(100);
        if (i % 200 == 0) raise(SIGUSR1);
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}
