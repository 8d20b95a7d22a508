/* Loads the library named by its argument (ctor_region.c), whose constructor runs OpenMP regions,
 * and prints what they computed. Usage: ctor_region_main ./libctor_region.so */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    long (*total)(void) = (long (*)(void))dlsym(lib, "ctor_total");
    if (!total) return 1;
    printf("total %ld\n", total());
    return 0;
}
