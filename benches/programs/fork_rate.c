/* Forks children that exit at once with _exit(0), waiting for each, for about argv[1] seconds
 * (default 1), and prints the forks per second of that loop (process start-up excluded). What a
 * fork costs the child is what stress-ng's fork stressor measures. With argv[2] "exec" each
 * child execs /bin/true instead (fork + exec + exit + wait, the shape of system()). With argv[3]
 * N, exactly N forks instead of a time, printed as "N forks, C us CPU each, in T ms" (C: the CPU
 * time of this process and its children over the loop, from getrusage; benches/overhead.sh).
 * With argv[4] M and argv[5] P, first M more anonymous mappings of P touched pages each, each
 * followed by an inaccessible page so that the kernel cannot merge them: what each mapping of a
 * process costs its forks (`fork_rate 0 exit 2000 10 0` against `0 exit 2000 0 0`: 20 more
 * mappings; docs/PERFORMANCE.md, "Fork children"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds of this process and of its children waited for. */
static double cpu(void) {
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec +
           (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    int exec = argc > 2 && strcmp(argv[2], "exec") == 0;
    long fixed = argc > 3 ? atol(argv[3]) : 0;
    int maps = argc > 4 ? atoi(argv[4]) : 0, pages = argc > 5 ? atoi(argv[5]) : 0;
    for (int i = 0; i < maps; i++) {
        size_t size = (size_t)(pages + 1) * 4096;
        char *p = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED || mprotect(p + size, 4096, PROT_NONE) != 0) return 1;
        for (int j = 0; j < pages; j++) p[(size_t)j * 4096] = 1;
    }
    double start = now(), end = start + seconds, t = start, cpu_start = cpu();
    long forks = 0;
    while (fixed ? forks < fixed : t < end) {
        for (int i = 0; i < 20 && (!fixed || forks < fixed); i++) {
            pid_t pid = fork();
            if (pid < 0) return 1;
            if (pid == 0) {
                if (exec) execl("/bin/true", "true", (char *)NULL);
                _exit(exec ? 127 : 0);
            }
            waitpid(pid, NULL, 0);
            forks++;
        }
        t = now();
    }
    if (fixed)
        printf("%ld forks, %.0f us CPU each, in %.0f ms\n", forks, (cpu() - cpu_start) * 1e6 / (double)forks,
               (t - start) * 1e3);
    else printf("%.0f\n", forks / (t - start));
    return 0;
}
