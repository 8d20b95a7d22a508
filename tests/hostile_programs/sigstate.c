/* Prints the state a program inherits from whoever started it: the disposition of every signal
 * (ignored or default; a handler cannot survive exec), the blocked signals, which of the standard
 * descriptors are open, the resource limits and the umask.
 * Run plainly and under `stallscope run`, the two outputs must be the same. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void limit(const char *name, int resource) {
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0) {
        printf("limit %s: error\n", name);
        return;
    }
    printf("limit %s: %llu %llu\n", name, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
}

int main(void) {
    sigset_t blocked;
    sigprocmask(SIG_BLOCK, NULL, &blocked);
    printf("ignored:");
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0) continue; /* glibc's reserved signals */
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) printf(" %d", sig);
    }
    printf("\nhandled:");
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_IGN && old.sa_handler != SIG_DFL))
            printf(" %d", sig);
    }
    printf("\nblocked:");
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&blocked, sig) == 1) printf(" %d", sig);
    printf("\n");
    for (int fd = 0; fd < 3; fd++) {
        int flags = fcntl(fd, F_GETFD);
        printf("fd %d: %s\n", fd, flags < 0 && errno == EBADF ? "closed" : "open");
    }
    limit("nofile", RLIMIT_NOFILE);
    limit("core", RLIMIT_CORE);
    limit("stack", RLIMIT_STACK);
    limit("nproc", RLIMIT_NPROC);
    limit("as", RLIMIT_AS);
    mode_t mask = umask(0);
    printf("umask: %03o\n", (unsigned)mask);
    return 0;
}
