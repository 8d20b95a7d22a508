// A library that tests/stacks_dlopen.rs loads with dlopen, allocates from and unloads.
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void dl_alloc_many(int n) {
    for (int i = 0; i < n; i++) {
        void *p = malloc(4000); // MARK dl_alloc_many
        sink = sink + (unsigned long)p;
        free(p);
    }
}
