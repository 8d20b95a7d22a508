/* Every allocation API glibc has, from two threads: malloc, calloc, realloc (grow, shrink, from
 * NULL, to 0), reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, strdup, strndup, asprintf, getline, open_memstream, getdelim; prints a
 * checksum of what they returned. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long check(int round) {
    unsigned long sum = 0;
    char *m = malloc(100);
    memset(m, 'a', 99);
    m[99] = 0;
    char *c = calloc(10, 10);
    sum += (unsigned long)c[50];
    m = realloc(m, 5000);
    m = realloc(m, 10);
    m[9] = 0;
    char *r0 = realloc(NULL, 30);
    r0 = realloc(r0, 0); /* frees it in glibc; returns NULL */
    int *arr = reallocarray(NULL, 100, sizeof(int));
    arr[99] = round;
    sum += (unsigned long)arr[99];
    void *pm = NULL;
    sum += (unsigned long)posix_memalign(&pm, 64, 300);
    sum += ((uintptr_t)pm % 64 == 0);
    void *aa = aligned_alloc(128, 256);
    sum += ((uintptr_t)aa % 128 == 0);
    void *ma = memalign(256, 100);
    sum += ((uintptr_t)ma % 256 == 0);
    void *va = valloc(100);
    sum += ((uintptr_t)va % 4096 == 0);
    void *pv = pvalloc(100);
    sum += ((uintptr_t)pv % 4096 == 0);
    sum += malloc_usable_size(c) >= 100;
    char *d = strdup(m), *nd = strndup(m, 3);
    sum += strlen(d) + strlen(nd);
    char *as = NULL;
    if (asprintf(&as, "%d-%s", round, nd) > 0) sum += strlen(as);
    char *buf = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&buf, &len);
    fprintf(ms, "line one\nline two %d\n", round);
    fclose(ms);
    sum += len;
    FILE *in = fmemopen(buf, len, "r");
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) sum += strlen(line);
    rewind(in);
    while (getdelim(&line, &cap, ' ', in) > 0) sum++;
    fclose(in);
    free(line);
    free(buf);
    free(as);
    free(d);
    free(nd);
    free(pv);
    free(va);
    free(ma);
    free(aa);
    free(pm);
    free(arr);
    free(r0);
    free(c);
    free(m);
    return sum;
}

static void *work(void *arg) {
    (void)arg;
    unsigned long sum = 0;
    for (int i = 0; i < 2000; i++) sum += check(i);
    return (void *)sum;
}

int main(void) {
    pthread_t a, b;
    pthread_create(&a, NULL, work, NULL);
    pthread_create(&b, NULL, work, NULL);
    void *ra, *rb;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    printf("checksums %lu %lu\n", (unsigned long)ra, (unsigned long)rb);
    return 0;
}
