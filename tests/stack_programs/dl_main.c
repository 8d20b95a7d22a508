// Loads the library named by argv[1], allocates through it, unloads it, then allocates on.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void (*fn)(int) = (void (*)(int))dlsym(lib, "dl_alloc_many");
    if (!fn) return 1;
    fn(20000);
    if (dlclose(lib) != 0) return 1;
    for (int i = 0; i < 1000; i++) free(malloc(64));
    printf("unloaded\n");
    return 0;
}
