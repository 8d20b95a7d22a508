/* posix_spawnp `sh -c "echo spawned"` and wait for it. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(void) {
    void *keep = malloc(100);
    char *argv[] = {"sh", "-c", "echo spawned", NULL};
    pid_t pid;
    fflush(stdout);
    if (posix_spawnp(&pid, "sh", NULL, NULL, argv, environ) != 0) return 10;
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 11;
    free(keep);
    printf("parent done\n");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 12;
}
