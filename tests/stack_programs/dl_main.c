// Loads the library named by argv[1], allocates through it, unloads it, then allocates on. With
// a second library argv[2], loads that one next (often at the same addresses) and does the same.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int use(const char *path, const char *fn_name, uintptr_t *where) {
    void *lib = dlopen(path, RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*fn)(int) = (void (*)(int))dlsym(lib, fn_name);
    if (!fn) return 1;
    *where = (uintptr_t)fn;
    fn(20000);
    return dlclose(lib) != 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    uintptr_t a = 0, b = 0;
    if (use(argv[1], "dl_alloc_many", &a)) return 1;
    for (int i = 0; i < 1000; i++) free(malloc(64));
    if (argc > 2 && use(argv[2], "dl_alloc_other", &b)) return 1;
    printf("unloaded\n");
    if (argc > 2) fprintf(stderr, "%s\n", a >> 16 == b >> 16 ? "same addresses" : "other addresses");
    return 0;
}
