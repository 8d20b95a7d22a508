/* Prints the program's environment as `environ` holds it (what getenv and exec see), then as the
 * kernel passed it (/proc/self/environ), one entry a line, each list after a header line. Run
 * plainly and under `stallscope run`: the lists must be the same apart from the preload
 * (the program sees its environment apart from the preload itself). */
#include <stdio.h>
#include <unistd.h>

extern char **environ;

int main(void) {
    printf("== environ\n");
    for (char **e = environ; *e; e++) printf("%s\n", *e);
    printf("== /proc/self/environ\n");
    FILE *f = fopen("/proc/self/environ", "r");
    if (!f) return 1;
    int c, at_start = 1;
    while ((c = fgetc(f)) != EOF) {
        putchar(c ? c : '\n');
        at_start = c == 0;
    }
    if (!at_start) putchar('\n');
    fclose(f);
    return 0;
}
