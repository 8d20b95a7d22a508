/* Two threads dlopen, dlsym and dlclose glibc's own libraries 300 times each (libresolv and
 * libutil: always there, seldom loaded), while allocating; prints how many symbols were found.
 * (The profiler's module list follows objects that come and go.) */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *loop(void *arg) {
    const char *const *which = arg;
    long found = 0;
    for (int i = 0; i < 300; i++) {
        void *h = dlopen(which[0], RTLD_NOW | RTLD_LOCAL);
        if (!h) continue;
        if (dlsym(h, which[1])) found++;
        free(malloc(100 + (size_t)i));
        dlclose(h);
    }
    return (void *)found;
}

int main(void) {
    static const char *const a[] = {"libresolv.so.2", "res_query"};
    static const char *const b[] = {"libutil.so.1", "forkpty"};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, loop, (void *)a);
    pthread_create(&tb, NULL, loop, (void *)b);
    void *ra, *rb;
    pthread_join(ta, &ra);
    pthread_join(tb, &rb);
    printf("found %ld %ld\n", (long)ra, (long)rb);
    return 0;
}
