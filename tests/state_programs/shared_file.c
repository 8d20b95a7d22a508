/* Two threads fprintf-ing to one FILE: glibc's FILE lock is taken inside every call. */
#include <pthread.h>
#include <stdio.h>

static FILE *out;

static void *writer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 400000; i++) fprintf(out, "%ld %d\n", id, i);
    return NULL;
}

int main(void) {
    out = fopen("/dev/null", "w");
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, writer, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    fclose(out);
    puts("done");
    return 0;
}
