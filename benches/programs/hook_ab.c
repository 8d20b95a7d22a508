/* An allocator hook's cost measured inside one process (benches/hook_inprocess.sh): the workload
 * (bignum_pell's or alloc_churn's, built with -DHOOK_AB) calls malloc and free through two
 * function pointers, and the driver switches them between glibc's functions and the hooks of
 * libraries loaded with dlopen (RTLD_LOCAL: they interpose nothing), one short round (about a
 * millisecond) at a time, the mode that starts rotating from round to round. A round of each mode
 * sits next to a round of every other, so the host's slow drifts (another virtual machine, the
 * clock speed), which move a whole process's time by more than the hooks cost, cancel in the
 * per-round ratios.
 *
 *   hook_ab pell|churn SIZE ROUNDS MODE...
 * MODE is `plain` (glibc's malloc and free) or the path of a library exporting malloc and free,
 * perhaps after settings it is loaded with: `NAME=VALUE,NAME=VALUE@PATH` (set in the environment
 * while it loads, for a library that reads them at its start, as the interposer does: two copies
 * of it with two settings side by side).
 * SIZE is pell's limit or churn's batches of 64 pairs per round. Prints per mode the median of
 * its per-round ratios to the first mode's round (with the quartiles), and the ratio of the
 * tenth percentiles of its round times (the machine at its quietest). Thread CPU time.
 *
 * churn runs beside a second thread that only waits, as alloc_churn's two threads do: glibc's
 * malloc takes its multi-threaded paths (atomic fast bins) once a process has made a thread, and
 * the interposer's flusher is such a thread, which the floor libraries do not make. pell runs
 * alone, as bignum_pell does, so what the flusher costs a single-threaded program is in its
 * figure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *(*hook_ab_malloc)(size_t);
void (*hook_ab_free)(void *);
uint64_t hook_ab_pell(uint32_t limit);
uint64_t hook_ab_churn(uint32_t batches);

#define MAX_MODES 16

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void *idle_thread(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc - 4 > MAX_MODES) {
        fprintf(stderr, "usage: hook_ab pell|churn SIZE ROUNDS MODE... (at most %d modes)\n", MAX_MODES);
        return 2;
    }
    int churn = strcmp(argv[1], "churn") == 0;
    pthread_t idle;
    if (churn && pthread_create(&idle, NULL, idle_thread, NULL) != 0) return 1;
    uint32_t size = (uint32_t)atol(argv[2]);
    int rounds = atoi(argv[3]), modes = argc - 4;
    if (rounds < 4) rounds = 4;
    void *(*mallocs[MAX_MODES])(size_t);
    void (*frees[MAX_MODES])(void *);
    for (int m = 0; m < modes; m++) {
        const char *mode = argv[4 + m];
        if (strcmp(mode, "plain") == 0) {
            mallocs[m] = malloc;
            frees[m] = free;
            continue;
        }
        const char *at = strchr(mode, '@'), *path = at ? at + 1 : mode;
        char settings[512] = "";
        if (at && (size_t)(at - mode) >= sizeof settings) {
            fprintf(stderr, "hook_ab: settings longer than %zu bytes: %s\n", sizeof settings - 1, mode);
            return 2;
        }
        if (at) memcpy(settings, mode, (size_t)(at - mode));
        for (char *kv = strtok(settings, ","); kv; kv = strtok(NULL, ",")) putenv(strdup(kv));
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "hook_ab: %s\n", dlerror());
            return 1;
        }
        if (at) { /* the settings were for this library only */
            memcpy(settings, mode, (size_t)(at - mode));
            settings[at - mode] = 0;
            for (char *kv = strtok(settings, ","); kv; kv = strtok(NULL, ",")) {
                char *eq = strchr(kv, '=');
                if (eq) *eq = 0;
                unsetenv(kv);
            }
        }
        mallocs[m] = (void *(*)(size_t))dlsym(h, "malloc");
        frees[m] = (void (*)(void *))dlsym(h, "free");
        if (!mallocs[m] || !frees[m]) {
            fprintf(stderr, "hook_ab: %s exports no malloc or free\n", mode);
            return 1;
        }
    }
    double *ms = calloc((size_t)rounds * modes, sizeof *ms), *v = calloc((size_t)rounds, sizeof *v);
    if (!ms || !v) return 1;
    uint64_t expected = 0;
    for (int r = -3; r < rounds; r++) /* three rounds of each mode warm up, not counted */
        for (int j = 0; j < modes; j++) {
            int m = (j + (r < 0 ? 0 : r)) % modes;
            hook_ab_malloc = mallocs[m];
            hook_ab_free = frees[m];
            double start = cpu_ms();
            uint64_t check = churn ? hook_ab_churn(size) : hook_ab_pell(size);
            double took = cpu_ms() - start;
            if (!expected) expected = check;
            if (check != expected) {
                fprintf(stderr, "hook_ab: %s computed another result\n", argv[4 + m]);
                return 1;
            }
            if (r >= 0) ms[r * modes + m] = took;
        }
    double base_p10 = 0;
    for (int m = 0; m < modes; m++) {
        for (int r = 0; r < rounds; r++) v[r] = ms[r * modes + m] / ms[r * modes];
        qsort(v, (size_t)rounds, sizeof *v, by_value);
        double med = v[rounds / 2], q1 = v[rounds / 4], q3 = v[3 * rounds / 4];
        for (int r = 0; r < rounds; r++) v[r] = ms[r * modes + m];
        qsort(v, (size_t)rounds, sizeof *v, by_value);
        double p10 = v[rounds / 10];
        if (m == 0) base_p10 = p10;
        /* A mode's name: its file's, after its settings if it has any. */
        const char *mode = argv[4 + m], *at = strchr(mode, '@'), *path = at ? at + 1 : mode;
        const char *file = strrchr(path, '/');
        char name[600];
        snprintf(name, sizeof name, "%.*s%s%s", at ? (int)(at - mode) : 0, mode, at ? " " : "",
                 file ? file + 1 : path);
        printf("%-16s %8.3f ms  ratio %.3f (quartiles %.3f-%.3f)  tenth percentile %.3fx\n", name,
               v[rounds / 2], med, q1, q3, p10 / base_p10);
    }
    return 0;
}
