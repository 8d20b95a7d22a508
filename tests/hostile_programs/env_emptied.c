/* Runs itself again three ways with an emptied environment: execve with an empty envp,
 * clearenv() then execv, and posix_spawn with an empty envp; each new image prints how many
 * variables it has (0) and whether LD_PRELOAD is set. (An emptied environment
 * stays empty, and the profile is still written at the path asked for.) */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc > 1) {
        int n = 0;
        for (char **e = environ; e && *e; e++) n++;
        printf("%s: %d variables, LD_PRELOAD %s\n", argv[1], n, getenv("LD_PRELOAD") ? "set" : "unset");
        fflush(stdout);
        if (strcmp(argv[1], "execve") == 0) { /* the chain goes on with clearenv */
            char *args[] = {argv[0], "clearenv", NULL};
            clearenv();
            execv("/proc/self/exe", args);
            return 20;
        }
        return 0;
    }
    char *empty[] = {NULL};
    char *sargs[] = {argv[0], "posix_spawn", NULL};
    pid_t pid;
    int st;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, sargs, empty) != 0) return 10;
    waitpid(pid, &st, 0);
    printf("spawned child exited %d\n", WEXITSTATUS(st));
    fflush(stdout);
    char *args[] = {argv[0], "execve", NULL};
    execve("/proc/self/exe", args, empty);
    return 11;
}
