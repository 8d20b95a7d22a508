/* Loads each plugin named on the command line with RTLD_LOCAL, as Python loads an extension, and
 * runs its `plugin_run` and `plugin_tail` (reload_plugin.c), printing each result. Each plugin needs its own copy of
 * libgomp under a name of its own, as Python wheels bundle it (auditwheel: libgomp-<hash>.so.1),
 * which no other object shares.
 * Usage: bundled_main ITEMS ./libplugin_a.so [./libplugin_b.so ...] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int items = atoi(argv[1]);
    long (*run[8])(int), (*tail[8])(int);
    int n = 0;
    for (int i = 2; i < argc && n < 8; i++) { /* all loaded first: each copy loaded when the others run */
        void *plugin = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!plugin) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        run[n] = (long (*)(int))dlsym(plugin, "plugin_run");
        tail[n] = (long (*)(int))dlsym(plugin, "plugin_tail");
        if (!run[n++] || !tail[n - 1]) return 1;
    }
    for (int i = 0; i < n; i++) printf("%ld %ld\n", run[i](items), tail[i](items / 10));
    return 0;
}
