/* Loads each plugin named on the command line with RTLD_LOCAL, as Python loads an extension, and
 * runs its `plugin_run` and `plugin_tail` (reload_plugin.c), printing each result. Each plugin needs its own copy of
 * libgomp under a name of its own, as Python wheels bundle it (auditwheel: libgomp-<hash>.so.1),
 * which no other object shares.
 * A plugin named as global:PATH is opened with RTLD_GLOBAL (its libgomp copy then joins the
 * global scope, which the dynamic linker searches first for the plugins opened after it).
 * Usage: bundled_main ITEMS [global:]./libplugin_a.so [[global:]./libplugin_b.so ...] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int items = atoi(argv[1]);
    long (*run[8])(int), (*tail[8])(int);
    int n = 0;
    for (int i = 2; i < argc && n < 8; i++) { /* all loaded first: each copy loaded when the others run */
        int global = strncmp(argv[i], "global:", 7) == 0;
        void *plugin = dlopen(argv[i] + (global ? 7 : 0), RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
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
