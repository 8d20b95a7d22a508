/* What this machine charges for the operations a profiled start is made of (docs/PERFORMANCE.md,
 * "A start's fixed cost"): cpuid (a VM exit under a hypervisor), rdtsc, a system call, the
 * first touch of an anonymous page, a futex round trip between two threads, fork and vfork of a
 * process that exits at once, and making and removing a directory and a file in DIR (argv[1]).
 * Each figure is the mean of many repetitions; run it twice to see the noise. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int word;
static void futex_wait_while(int v) {
    while (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == v) syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, v, 0, 0, 0);
}
static void futex_set(int v) {
    __atomic_store_n(&word, v, __ATOMIC_RELEASE);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
}
enum { PINGS = 1000 };
static void *ponger(void *arg) {
    (void)arg;
    for (int i = 0; i < PINGS; i++) {
        futex_wait_while(2 * i);
        futex_set(2 * i + 2);
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    unsigned a, b, c, d;
    double t = now_ns();
    for (int i = 0; i < 1000; i++) __cpuid(0, a, b, c, d);
    printf("cpuid                  %8.0f ns\n", (now_ns() - t) / 1000);
    unsigned long long sum = 0;
    t = now_ns();
    for (int i = 0; i < 100000; i++) sum += __builtin_ia32_rdtsc();
    printf("rdtsc                  %8.1f ns\n", (now_ns() - t) / 100000);
    t = now_ns();
    for (int i = 0; i < 10000; i++) syscall(SYS_getpid);
    printf("system call (getpid)   %8.0f ns\n", (now_ns() - t) / 10000);
    enum { PAGES = 4000 };
    char *p = mmap(NULL, PAGES * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    t = now_ns();
    for (long i = 0; i < PAGES; i++) p[i * 4096] = 1;
    printf("first touch of a page  %8.0f ns\n", (now_ns() - t) / PAGES);
    pthread_t th;
    pthread_create(&th, NULL, ponger, NULL);
    usleep(1000);
    t = now_ns();
    for (int i = 0; i < PINGS; i++) {
        futex_set(2 * i + 1);
        futex_wait_while(2 * i + 1);
    }
    printf("futex round trip       %8.1f us\n", (now_ns() - t) / PINGS / 1000);
    pthread_join(th, NULL);
    t = now_ns();
    for (int i = 0; i < 200; i++) {
        pid_t k = fork();
        if (k == 0) _exit(0);
        waitpid(k, NULL, 0);
    }
    printf("fork, _exit, waitpid   %8.0f us\n", (now_ns() - t) / 200 / 1000);
    t = now_ns();
    for (int i = 0; i < 200; i++) {
        pid_t k = vfork();
        if (k == 0) _exit(0);
        waitpid(k, NULL, 0);
    }
    printf("vfork, _exit, waitpid  %8.0f us\n", (now_ns() - t) / 200 / 1000);
    double mk = 0, cr = 0, ul = 0, rm = 0;
    enum { FILES = 200 };
    for (int i = 0; i < FILES; i++) {
        char sub[4096], file[4200];
        snprintf(sub, sizeof sub, "%s/machine-costs-%d-%d", dir, (int)getpid(), i);
        snprintf(file, sizeof file, "%s/f", sub);
        double t0 = now_ns();
        if (mkdir(sub, 0777) != 0) {
            perror(sub);
            return 1;
        }
        double t1 = now_ns();
        int fd = open(file, O_CREAT | O_WRONLY, 0644);
        if (fd < 0 || write(fd, "abc", 3) != 3) return 1;
        close(fd);
        double t2 = now_ns();
        unlink(file);
        double t3 = now_ns();
        rmdir(sub);
        double t4 = now_ns();
        mk += t1 - t0, cr += t2 - t1, ul += t3 - t2, rm += t4 - t3;
    }
    printf("in %s: mkdir %.1f us, create %.1f us, unlink %.1f us, rmdir %.1f us\n", dir, mk / FILES / 1000,
           cr / FILES / 1000, ul / FILES / 1000, rm / FILES / 1000);
    return sum == 1;
}
