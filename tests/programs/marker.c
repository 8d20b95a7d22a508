/* Creates the file named by its argument: proves that it ran (used for programs that stallscope
 * must refuse to run, compiled static or installed setuid). */
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 1;
    FILE *f = fopen(argv[1], "w");
    if (!f) return 2;
    fputs("ran\n", f);
    return fclose(f) == 0 ? 0 : 3;
}
