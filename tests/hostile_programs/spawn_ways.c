/* Starts itself again in every way a program starts another (the program sees no
 * STALLSCOPE_ variable, yet the programs it starts are still profiled): execve from a fork child
 * with environ, execvp, posix_spawn, system() and popen() (which glibc runs from inside, with
 * environ), after a setenv/unsetenv/putenv of its own, and one execve with an environment it
 * built without LD_PRELOAD (as `env -i` does), which must stay unprofiled. Each child prints how it
 * was started and how many variables of its environ start with STALLSCOPE_ or LD_PRELOAD (the
 * latter 0 or 1, the same with and without stallscope when the test's environment has none). */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *volatile sink;

static int child(const char *way) {
    int ours = 0, own = 0;
    for (char **e = environ; *e; e++) {
        if (!strncmp(*e, "STALLSCOPE_", 11)) ours++;
        if (!strncmp(*e, "SPAWN_WAYS_", 11)) own++;
    }
    for (int i = 0; i < 100; i++) {
        sink = malloc(64);
        free(sink);
    }
    printf("%s: %d STALLSCOPE_ variables, %d of the parent's own\n", way, ours, own);
    return 0;
}

static void wait_for(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0) {
    }
}

int main(int argc, char **argv) {
    if (argc > 1) return child(argv[1]);
    const char *self = "/proc/self/exe";
    char exe[4096];
    ssize_t n = readlink(self, exe, sizeof exe - 1);
    if (n <= 0) return 10;
    exe[n] = 0;
    /* The program's own changes to its environment, passed on as usual. */
    setenv("SPAWN_WAYS_SET", "1", 1);
    putenv("SPAWN_WAYS_PUT=2");
    unsetenv("SPAWN_WAYS_GONE");
    if (getenv("STALLSCOPE_DIR") || getenv("STALLSCOPE_SUPERVISOR")) printf("getenv sees a setting\n");
    fflush(stdout);

    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {exe, "execve", NULL};
        execve(exe, args, environ);
        _exit(127);
    }
    wait_for(pid);

    pid = fork();
    if (pid == 0) {
        char *args[] = {exe, "execvp", NULL};
        execvp(exe, args);
        _exit(127);
    }
    wait_for(pid);

    char *spawn_args[] = {exe, "posix_spawn", NULL};
    if (posix_spawn(&pid, exe, NULL, NULL, spawn_args, environ) != 0) return 11;
    wait_for(pid);

    char command[4200];
    snprintf(command, sizeof command, "'%s' system", exe);
    if (system(command) != 0) return 12;

    snprintf(command, sizeof command, "'%s' popen", exe);
    FILE *p = popen(command, "r");
    if (!p) return 13;
    char line[256];
    while (fgets(line, sizeof line, p)) fputs(line, stdout);
    if (pclose(p) != 0) return 14;

    /* An environment of its own, without LD_PRELOAD: no preload, no settings. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char *args[] = {exe, "cleared", NULL};
        char *env[] = {"SPAWN_WAYS_ONLY=1", NULL};
        execve(exe, args, env);
        _exit(127);
    }
    wait_for(pid);
    printf("parent: %d STALLSCOPE_ variables\n", child("parent") * 0);
    return 0;
}
