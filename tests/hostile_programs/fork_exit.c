/* Forks children that exit at once with _exit (argv[1] of them, default 1; status argv[2],
 * default 3) and waits for each. Prints how many exited with that status. (Each such child
 * gets a profile; what fork costs under the interposer is measured by benches/fork_rate.sh.) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    int code = argc > 2 ? atoi(argv[2]) : 3;
    int same = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) _exit(code);
        int status;
        if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == code) same++;
    }
    printf("children %d exited %d\n", n, same);
    return 0;
}
