/* Allocates a little, then raises the signal given as its argument (default SIGTERM). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;
    void *p = malloc(32);
    printf("raising %d\n", sig);
    fflush(stdout);
    free(p);
    raise(sig);
    return 0;
}
