/* Lowers RLIMIT_NOFILE at run time (after start, threads running), to a few above what is open,
 * then opens /dev/null until EMFILE and prints the descriptors it got; then raises it back and
 * lets its threads allocate again. The same as without stallscope. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static void *work(void *arg) {
    for (int i = 0; i < 20000; i++) free(malloc(48));
    return arg;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    /* The lowest descriptor the program has not opened: what it would count on. */
    int probe = open("/dev/null", O_RDONLY);
    close(probe);
    struct rlimit old, low;
    getrlimit(RLIMIT_NOFILE, &old);
    low = old;
    low.rlim_cur = (rlim_t)probe + 4;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 3;
    int got[16], n = 0, fd;
    while (n < 16 && (fd = open("/dev/null", O_RDONLY)) >= 0) got[n++] = fd;
    int err = errno;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    printf("opened %d under the limit (%s)\n", n, err == EMFILE ? "EMFILE" : "other error");
    for (int i = 0; i < n; i++) close(got[i]);
    setrlimit(RLIMIT_NOFILE, &old);
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    printf("limit restored\n");
    return 0;
}
