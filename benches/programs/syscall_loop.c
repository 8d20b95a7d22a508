/* The cost of the interposer's syscall() hook on system calls that are not futex waits: one
 * thread calls syscall(SYS_getppid) N times (benches/overhead.sh case `syscalls`). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    long sum = 0;
    double start = now_ms();
    for (long i = 0; i < n; i++) sum += syscall(SYS_getppid);
    printf("calls %ld\nloop %.1f ms\n", n, now_ms() - start);
    return sum == 0;
}
