/* The less common allocator entry points, each a known number of times (main thread only):
 *   memalign(32, 100) x7, valloc(200) x5, pvalloc(300) x3        -> "aligned": 15 calls
 *   reallocarray(p, 10, 12) x11 of a malloc(8) pointer           -> "realloc" (with realloc)
 *   realloc(NULL, 50) x13 (acts as malloc, but is a realloc call) -> "realloc" (the NULL is
 *     volatile: gcc would otherwise turn realloc(NULL, n) into malloc(n))
 *   free(NULL) x17                                                -> "free"
 * With the argument "empty" it does none of them. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

static void use(void *p, size_t n) {
    memset(p, 7, n);
    sink += ((volatile unsigned char *)p)[n - 1];
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "empty") == 0) return 0;
    for (int i = 0; i < 7; i++) {
        void *p = memalign(32, 100);
        use(p, 100);
        free(p);
    }
    for (int i = 0; i < 5; i++) {
        void *p = valloc(200);
        use(p, 200);
        free(p);
    }
    for (int i = 0; i < 3; i++) {
        void *p = pvalloc(300);
        use(p, 300);
        free(p);
    }
    for (int i = 0; i < 11; i++) {
        void *p = malloc(8);
        use(p, 8);
        void *q = reallocarray(p, 10, 12);
        use(q, 120);
        free(q);
    }
    void *volatile none = NULL;
    for (int i = 0; i < 13; i++) {
        void *p = realloc(none, 50);
        use(p, 50);
        free(p);
    }
    for (int i = 0; i < 17; i++) free(none);
    return 0;
}
