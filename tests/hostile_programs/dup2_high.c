/* dup2s over high descriptor numbers it never opened (500 to 1023, where a profiler might keep
 * its own), writes through them, closes them, while threads allocate; prints what each write
 * returned. The same as without stallscope. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

static void *work(void *arg) {
    for (int i = 0; i < 30000; i++) free(malloc(32 + (size_t)(i % 100)));
    return arg;
}

int main(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int top = rl.rlim_cur > 1024 ? 1023 : (int)rl.rlim_cur - 1;
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    int null = open("/dev/null", O_WRONLY);
    long ok = 0, bad = 0;
    for (int round = 0; round < 3; round++) {
        for (int fd = 500; fd <= top; fd++) {
            if (dup2(null, fd) != fd) {
                bad++;
                continue;
            }
            if (write(fd, "x", 1) == 1) ok++;
        }
        char *p = malloc(1000);
        free(p);
        for (int fd = 500; fd <= top; fd++) close(fd);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("writes %ld, failed dup2 %ld\n", ok, bad);
    return 0;
}
