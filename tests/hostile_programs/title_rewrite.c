/* A server naming its processes as PostgreSQL does (and setproctitle): the program first moves
 * its environment out of the way (copies of the strings, a new environ), then a process zeroes
 * the whole area from argv[0] to the end of the last environment string and writes its title
 * there (program_invocation_short_name and /proc/self/cmdline point into it). The fork child
 * takes the title "titled: worker", then the parent "titled: main". */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *area_start, *area_end;

static void set_title(const char *title) {
    memset(area_start, 0, (size_t)(area_end - area_start));
    strncpy(area_start, title, (size_t)(area_end - area_start) - 1);
}

int main(int argc, char **argv) {
    (void)argc;
    /* The contiguous area: the arguments, then the environment strings that follow them. */
    area_start = argv[0];
    area_end = argv[0] + strlen(argv[0]);
    for (int i = 1; argv[i]; i++)
        if (argv[i] == area_end + 1) area_end = argv[i] + strlen(argv[i]);
    int n = 0;
    while (environ[n]) n++;
    char **moved = malloc(sizeof(char *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        if (environ[i] == area_end + 1) area_end = environ[i] + strlen(environ[i]);
        moved[i] = strdup(environ[i]);
    }
    moved[n] = NULL;
    environ = moved;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        set_title("titled: worker");
        for (int i = 0; i < 1000; i++) free(malloc(100 + (size_t)i));
        usleep(20000);
        _exit(0);
    }
    set_title("titled: main");
    for (int i = 0; i < 1000; i++) free(malloc(200 + (size_t)i));
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
