/* What each mapping of a process costs its forks: maps argv[1] anonymous mappings of argv[2]
 * touched pages each (each followed by an inaccessible page, so that the kernel cannot merge
 * them), then forks 2,000 children that only _exit, each waited for, and prints the CPU time
 * per fork of the process and its children (getrusage). Compare `fork_mappings 0 0` with
 * `fork_mappings 10 0` (20 more mappings) and `fork_mappings 1 30` (30 more pages in one).
 * docs/PERFORMANCE.md, "Issue 27's fourth stop". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static double cpu(void) {
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec +
           (self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv) {
    int maps = argc > 1 ? atoi(argv[1]) : 0, pages = argc > 2 ? atoi(argv[2]) : 0;
    for (int i = 0; i < maps; i++) {
        size_t size = (size_t)(pages + 1) * 4096;
        char *p = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED || mprotect(p + size, 4096, PROT_NONE) != 0) return 1;
        for (int j = 0; j < pages; j++) p[(size_t)j * 4096] = 1;
    }
    double start = cpu();
    for (int i = 0; i < 2000; i++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) _exit(0);
        waitpid(pid, NULL, 0);
    }
    printf("%d mappings of %d pages (x2, split): %.1f us CPU per fork\n", maps, pages, (cpu() - start) * 1e6 / 2000);
    return 0;
}
