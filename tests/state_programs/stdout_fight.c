/* Two threads printf-ing to stdout (sent to /dev/null): every call takes stdout's lock, a static
 * of the C library (_IO_stdfile_1_lock). */
#include <pthread.h>
#include <stdio.h>

static void *printer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 1500000; i++) printf("%ld %d\n", id, i);
    return NULL;
}

int main(void) {
    if (!freopen("/dev/null", "w", stdout)) return 1;
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, printer, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    fputs("done\n", stderr);
    return 0;
}
