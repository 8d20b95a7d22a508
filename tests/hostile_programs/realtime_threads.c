/* A program run at real-time priority, as `chrt -f 1` would run it: it makes itself SCHED_FIFO 1
 * (root or CAP_SYS_NICE; prints "no realtime" otherwise) and executes itself again, so that
 * everything loaded at its start (an interposer and its threads) starts real-time. Then it starts
 * a thread (which inherits the policy) that stays busy for 200 ms, prints its own threads'
 * policies on stdout, and on stderr the policy of any thread named "stallscope" (the interposer's
 * flusher), read after the busy time. */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int worker_policy = -1;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    (void)arg;
    worker_policy = sched_getscheduler(0);
    double end = now_s() + 0.2;
    while (now_s() < end) {}
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        struct sched_param p = {.sched_priority = 1};
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
            printf("no realtime\n");
            return 0;
        }
        char *again[] = {argv[0], "again", NULL};
        execv("/proc/self/exe", again);
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0) return 1;
    pthread_join(t, NULL);
    printf("main %d worker %d\n", sched_getscheduler(0), worker_policy);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
        fclose(f);
        if (strcmp(comm, "stallscope\n") == 0)
            fprintf(stderr, "flusher policy %d\n", sched_getscheduler(atoi(e->d_name)));
    }
    if (d) closedir(d);
    return 0;
}
