/* vfork, then exec `sh -c "echo child"` in the child (which shares the parent's memory until the
 * exec); the parent waits and passes on its status. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    void *keep = malloc(100); /* the parent does something worth profiling */
    fflush(stdout);
    pid_t pid = vfork();
    if (pid < 0) return 10;
    if (pid == 0) {
        execlp("sh", "sh", "-c", "echo child", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 11;
    free(keep);
    printf("parent done\n");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 12;
}
