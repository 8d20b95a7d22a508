/* Changes its user as setpriv does, then from a thread that is not the main thread while other
 * threads run and allocate. glibc applies setresuid, setresgid and setgroups to every thread it
 * knows (its SIGSETXID broadcast) and aborts when one thread's result differs. First, while it
 * has one thread, it keeps its capabilities across setresuid (PR_SET_KEEPCAPS, a per-thread
 * flag) and raises them again (capset, per thread), then calls setresgid, which needs them: a
 * thread of the interposer's that did not do the same would fail it (SIGABRT). Then a second
 * thread repeats the calls while three others allocate. Prints each call's result and whether
 * every thread, the interposer's included, ended with the new user and group; run as root,
 * plainly and under `stallscope run`, the output must be the same. */
#define _GNU_SOURCE
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#define WORKERS 3
static volatile int stop;

static void *work(void *arg) {
    (void)arg;
    while (!stop) free(malloc(64));
    return NULL;
}

/* The Uid: and Gid: lines of one thread's status. */
static void ids_of(const char *tid, char *uid, char *gid, size_t cap) {
    char path[300], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    FILE *f = fopen(path, "r");
    uid[0] = gid[0] = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Uid:", 4)) snprintf(uid, cap, "%s", line + 4);
        if (!strncmp(line, "Gid:", 4)) snprintf(gid, cap, "%s", line + 4);
    }
    fclose(f);
}

/* The calling thread's effective capabilities raised to its permitted ones. */
static int raise_capabilities(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) return -1;
    d[0].effective = d[0].permitted;
    d[1].effective = d[1].permitted;
    return (int)syscall(SYS_capset, &h, d);
}

static void *change(void *arg) {
    (void)arg;
    int groups = setgroups(0, NULL);
    int gid = setresgid(65534, 65534, 65534);
    int uid = setresuid(65534, 65534, 65534);
    printf("from a thread: setgroups %d setresgid %d setresuid %d\n", groups, gid, uid);
    return NULL;
}

int main(void) {
    pthread_t workers[WORKERS], changer;
    free(malloc(100));
    int keep = prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    int uid = setresuid(65534, 65534, 65534);
    int caps = raise_capabilities();
    int gid = setresgid(65534, 65534, 65534);
    printf("alone: keepcaps %d setresuid %d capset %d setresgid %d\n", keep, uid, caps, gid);
    fflush(stdout);
    for (int i = 0; i < WORKERS; i++) pthread_create(&workers[i], NULL, work, NULL);
    usleep(50000);
    pthread_create(&changer, NULL, change, NULL);
    pthread_join(changer, NULL);
    /* Every thread of the program has the new user; ours, if any, must have it too. */
    int same = 1, threads = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    char uid_line[256], gid_line[256];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        ids_of(e->d_name, uid_line, gid_line, sizeof uid_line);
        threads++;
        if (strcmp(uid_line, "\t65534\t65534\t65534\t65534\n") || strcmp(gid_line, "\t65534\t65534\t65534\t65534\n")) {
            same = 0;
            fprintf(stderr, "thread %s: uid%s gid%s", e->d_name, uid_line, gid_line);
        }
    }
    if (d) closedir(d);
    printf("every thread is nobody: %s\n", same && threads > WORKERS ? "yes" : "no");
    stop = 1;
    for (int i = 0; i < WORKERS; i++) pthread_join(workers[i], NULL);
    printf("uid %d euid %d gid %d\n", (int)getuid(), (int)geteuid(), (int)getgid());
    return 0;
}
