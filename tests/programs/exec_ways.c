/* One process, six images, each started by another way of exec: execveat relative to a directory
 * descriptor, execveat of a descriptor (AT_EMPTY_PATH), fexecve, execle, execvpe (along PATH, which
 * the program sets to its own directory) and execv. Each image allocates 1000 + 100 x step blocks
 * and prints its step; the last exits 5. (tests/run_children.rs: every image gets its profile.) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
static void *volatile keep; /* the blocks escape: the compiler keeps each malloc and free */

int main(int argc, char **argv) {
    int step = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < 1000 + 100 * step; i++) {
        keep = malloc(16 + (size_t)(i % 200));
        free(keep);
    }
    printf("image %d\n", step);
    fflush(stdout);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 20;
    self[n] = 0;
    char dir[4096], base[4096];
    strcpy(dir, self);
    strcpy(base, self);
    const char *d = dirname(dir), *b = basename(base);
    char next[16];
    snprintf(next, sizeof next, "%d", step + 1);
    char *args[] = {(char *)b, next, NULL};
    switch (step) {
    case 0: {
        int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        execveat(dfd, b, args, environ, 0);
        return 21;
    }
    case 1: {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        execveat(fd, "", args, environ, AT_EMPTY_PATH);
        return 22;
    }
    case 2: {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        fexecve(fd, args, environ);
        return 23;
    }
    case 3:
        execle(self, b, next, (char *)NULL, environ);
        return 24;
    case 4:
        setenv("PATH", d, 1);
        execvpe(b, args, environ);
        return 25;
    case 5:
        execv(self, args);
        return 26;
    default:
        return 5;
    }
}
