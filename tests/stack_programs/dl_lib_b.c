// A second library for tests/stacks_dlopen.rs, loaded after dl_lib.c was unloaded: the loader
// usually puts it at the same addresses, which the report must tell apart by time.
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void other_padding(int n) {
    for (int i = 0; i < n; i++) sink = sink * 31 + (unsigned long)i;
}

__attribute__((noinline)) void dl_alloc_other(int n) {
    other_padding(3);
    for (int i = 0; i < n; i++) {
        void *p = malloc(5000); // MARK dl_alloc_other
        sink = sink + (unsigned long)p;
        free(p);
    }
}
