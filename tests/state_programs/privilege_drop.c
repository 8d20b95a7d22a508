/* A process that makes itself non-dumpable before its threads run, as a server's --user option
 * does (as root: setuid to nobody; otherwise prctl(PR_SET_DUMPABLE, 0)): its /proc files then
 * belong to root and what its threads wait in cannot be read. One thread computes while the
 * other, its own share done, waits on a condition variable for it. `privilege_drop keep` skips the drop: the control. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int done;

__attribute__((noinline)) static double crunch(long n);

/* Does a share of the work first (a thread that never works could take none of it), then
 * waits for the main thread's. */
static void *waiter(void *arg) {
    *(double *)arg = crunch(30000000);
    pthread_mutex_lock(&m);
    while (!done)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return arg;
}

__attribute__((noinline)) static double crunch(long n) {
    double s = 0;
    for (long i = 1; i < n; i++)
        s += 1.0 / (double)i;
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "keep") != 0) {
        if (getuid() == 0 ? setgid(65534) || setuid(65534) : prctl(PR_SET_DUMPABLE, 0) != 0) {
            perror("dropping privileges");
            return 1;
        }
    }
    pthread_t t;
    double part = 0;
    pthread_create(&t, NULL, waiter, &part);
    double s = crunch(300000000);
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    printf("%f\n", s + part);
    return 0;
}
