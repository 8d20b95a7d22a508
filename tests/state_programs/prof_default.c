/* A CPU-time interval timer and no SIGPROF handler: the default action ends the program with
 * SIGPROF. Under stallscope it must end the same way. */
#include <stdio.h>
#include <sys/time.h>

int main(void) {
    puts("started");
    fflush(stdout);
    struct itimerval it = {{0, 0}, {0, 100000}};
    setitimer(ITIMER_PROF, &it, NULL);
    volatile double x = 1;
    for (long i = 0; i < 3000000000L; i++) x = x * 1.0000001 + 1e-9;
    puts("not reached");
    return 0;
}
