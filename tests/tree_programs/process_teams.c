/* A run of PROCESSES processes (argv[1]) each with a team of THREADS threads (argv[2]) that
 * compute a fixed amount of work (argv[3] millions of steps per thread) at the same time: the
 * pattern of a process pool whose workers each size a thread pool (OpenMP, OpenBLAS) to the
 * whole machine. With PROCESSES x THREADS above the CPUs, the tree is oversubscribed although
 * no process alone is. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static long steps;
static volatile double sink;

static void *work(void *arg) {
    double x = 0;
    for (long i = 0; i < steps; i++) x += (double)i * 0.5;
    sink = x;
    return arg;
}

static void team(int threads) {
    pthread_t t[256];
    if (threads > 256) threads = 256;
    for (int i = 1; i < threads; i++) pthread_create(&t[i], NULL, work, NULL);
    work(NULL);
    for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv) {
    int processes = argc > 1 ? atoi(argv[1]) : 2;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    steps = (argc > 3 ? atol(argv[3]) : 100) * 1000000L;
    for (int p = 0; p < processes; p++) {
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid == 0) {
            team(threads);
            exit(0);
        }
    }
    int status, failed = 0;
    while (wait(&status) > 0) failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed;
}
