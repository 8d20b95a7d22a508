/* Creates and joins many short threads (argv[1], default 20000), a few at a time (argv[2],
 * default 2), each allocating and taking a mutex. Prints the total, and on stderr its peak
 * resident set (VmHWM). (The interposer's memory and profile must not grow with every
 * thread ever created.) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static char *volatile last; /* the allocation escapes: the compiler may not remove it */

static void *worker(void *arg) {
    long n = (long)arg;
    char *p = malloc(100 + (size_t)(n % 50));
    p[0] = (char)n;
    pthread_mutex_lock(&lock);
    total += p[0] == (char)n;
    free(last);
    last = p;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    long batch = argc > 2 ? atol(argv[2]) : 2;
    pthread_t th[64];
    if (batch < 1 || batch > 64) return 2;
    for (long i = 0; i < n; i += batch) {
        long k = 0;
        for (; k < batch && i + k < n; k++)
            if (pthread_create(&th[k], NULL, worker, (void *)(i + k)) != 0) return 3;
        while (k-- > 0) pthread_join(th[k], NULL);
    }
    free(last);
    printf("threads %ld total %ld\n", n, total);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) fprintf(stderr, "peak rss %ld kB\n", strtol(line + 6, NULL, 10));
    if (f) fclose(f);
    return 0;
}
