/* Loads the plugin named by argv[1] with RTLD_LOCAL, as Python loads an extension, and runs its
 * `plugin_run` (reload_plugin.c). The plugin needs its own copy of libgomp under another name, as
 * Python wheels bundle it (auditwheel: libgomp-<hash>.so.1), which no other object shares.
 * Usage: bundled_main ./libplugin.so [items=1000] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int items = argc > 2 ? atoi(argv[2]) : 1000;
    void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    long (*run)(int) = (long (*)(int))dlsym(plugin, "plugin_run");
    if (!run) return 1;
    printf("%ld\n", run(items));
    return 0;
}
