/* Under a low limit on open files the program must get the same descriptors it would get without
 * the profiler. Run without arguments, it lowers RLIMIT_NOFILE to argv-given N (default 5) and
 * executes itself, so that the new image starts under the limit as after `ulimit -n 5`; the new
 * image starts a thread, then opens /dev/null until EMFILE and prints the descriptors it got;
 * then it closes every descriptor above 2 and dup2s over numbers it never opened, as daemons do.
 * (The interposer's own descriptor must never take the lowest free number.) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void *idle(void *arg) {
    (void)arg;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "child") != 0) {
        struct rlimit rl = {argc > 1 ? strtoul(argv[1], NULL, 10) : 5, argc > 1 ? strtoul(argv[1], NULL, 10) : 5};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 2;
        execl("/proc/self/exe", argv[0], "child", (char *)NULL);
        return 3;
    }
    pthread_t th;
    pthread_create(&th, NULL, idle, NULL);
    /* Let the profiler's own thread get going (it reads /proc and writes its file). */
    for (int i = 0; i < 3; i++) {
        struct timespec ts = {0, 40 * 1000 * 1000};
        nanosleep(&ts, NULL);
        free(malloc(1000));
    }
    char got[256] = "";
    int n = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            printf("opened %d:%s then %s\n", n, got, errno == EMFILE ? "EMFILE" : strerror(errno));
            break;
        }
        n++;
        snprintf(got + strlen(got), sizeof got - strlen(got), " %d", fd);
    }
    pthread_join(th, NULL);
    /* Then as a daemon would: close every descriptor but the standard ones and take numbers it
     * never opened (dup2 onto 4, and onto 500 and up where no limit forbids it). */
    syscall(SYS_close_range, 3u, ~0u, 0u);
    struct rlimit rl = {1024, 1024};
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int fd = 500; fd < 510; fd++) dup2(1, fd);
    dup2(1, 4);
    for (int i = 0; i < 100; i++) free(malloc(100));
    return 0;
}
