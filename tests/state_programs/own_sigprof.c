/* A program with its own CPU profiler: a SIGPROF handler and an ITIMER_PROF timer. It must see
 * its own signals, and only those. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t ticks;

static void on_prof(int sig) { ticks++; }

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    volatile double x = 1;
    for (long i = 0; i < 200000000; i++) x = x * 1.0000001 + 1e-9;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    struct sigaction now;
    sigaction(SIGPROF, NULL, &now);
    printf("own handler still installed: %s\n", now.sa_handler == on_prof ? "yes" : "no");
    printf("ticks > 10: %s\n", ticks > 10 ? "yes" : "no");
    return 0;
}
