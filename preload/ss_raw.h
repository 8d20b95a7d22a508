/* System calls and byte loops for what a fork child runs before it does anything worth profiling
 * (SS_FORK_TEXT: fork's handler, the bare profile of a child that only exits). The child gets
 * each page of code it runs by a page fault, and every libc function it calls is on a page of
 * its own: memset, strlen, open, syscall, clock_gettime and the vDSO were 6 of such a child's 24 faults, against 19 for the
 * same child unprofiled (docs/PERFORMANCE.md, "Fork children"). These never set errno (which is
 * a call into libc too): the system calls return -errno. Elsewhere, libc's functions. */
#ifndef SS_RAW_H
#define SS_RAW_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
static inline long ss_raw_syscall3(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

static inline void ss_raw_zero(void *dst, size_t n) {
    __asm__ volatile("rep stosb" : "+D"(dst), "+c"(n) : "a"(0) : "memory");
}

static inline void ss_raw_copy(void *dst, const void *src, size_t n) {
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
#else
#include <errno.h>
static inline long ss_raw_syscall3(long nr, long a, long b, long c) {
    long ret = syscall(nr, a, b, c);
    return ret < 0 ? -errno : ret;
}

static inline void ss_raw_zero(void *dst, size_t n) { memset(dst, 0, n); }
static inline void ss_raw_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
#endif

#define SS_RAW(nr, a, b, c) ss_raw_syscall3((long)(nr), (long)(a), (long)(b), (long)(c))

/* The clock by a system call: libc's clock_gettime and the vDSO it calls are two more pages. */
static inline uint64_t ss_raw_clock_ns(clockid_t clock) {
    struct timespec ts = {0, 0};
    SS_RAW(SYS_clock_gettime, clock, &ts, 0);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A loop the compiler cannot turn back into a call of strlen (volatile reads). */
static inline size_t ss_raw_strlen(const char *s) {
    const volatile char *p = s;
    size_t n = 0;
    while (p[n]) n++;
    return n;
}

static inline int ss_raw_has_newline(const char *s) {
    const volatile char *p = s;
    for (size_t i = 0; p[i]; i++)
        if (p[i] == '\n') return 1;
    return 0;
}

#endif
