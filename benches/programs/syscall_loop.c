/* The cost of the interposer's syscall() hook on system calls that are not futex waits: one
 * thread calls syscall(SYS_getppid) N times (benches/overhead.sh case `syscalls`). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    long sum = 0;
    for (long i = 0; i < n; i++) sum += syscall(SYS_getppid);
    printf("calls %ld\n", n);
    return sum == 0;
}
