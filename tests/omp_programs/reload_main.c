/* Opens the OpenMP plugin named by argv[1] (reload_plugin.c), runs it and closes it, `rounds`
 * times; between rounds the first page where libgomp was is taken, so that the runtime comes back
 * at another address (libgomp is not NODELETE: closing the plugin unloads it). Prints each
 * round's result, and "moved" when the runtime came back elsewhere.
 * Usage: OMP_NUM_THREADS=1 reload_main ./libreload_plugin.so [rounds=4] [items=1000] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 4, items = argc > 3 ? atoi(argv[3]) : 1000;
    void *last = NULL;
    for (int r = 0; r < rounds; r++) {
        void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!plugin) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        long (*run)(int) = (long (*)(int))dlsym(plugin, "plugin_run");
        Dl_info runtime;
        void *entry = dlsym(plugin, "GOMP_parallel");
        if (!run || !entry || !dladdr(entry, &runtime)) return 1;
        printf("round %d: %ld%s\n", r, run(items), last && runtime.dli_fbase != last ? " moved" : "");
        last = runtime.dli_fbase;
        if (dlclose(plugin) != 0) return 1;
        void *still = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (still) { /* another user keeps it: nothing to move */
            dlclose(still);
            continue;
        }
        mmap(last, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    }
    return 0;
}
