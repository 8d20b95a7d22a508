/* A server naming its worker as PostgreSQL does: the fork child zeroes its whole argument area
 * and writes a title at argv[0] (program_invocation_short_name pointed into it). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        memset(argv[0], 0, (size_t)(end - argv[0]));
        strncpy(argv[0], "titled: worker", (size_t)(end - argv[0]));
        for (int i = 0; i < 1000; i++) free(malloc(100 + (size_t)i));
        usleep(20000);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
