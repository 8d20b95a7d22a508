// A trivial program: a few allocations and one line of output. It must get no finding.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char *name = malloc(32);
    strcpy(name, "trivial");
    int *values = calloc(100, sizeof *values);
    values[7] = 7;
    printf("%s %d\n", name, values[7]);
    free(values);
    free(name);
    return 0;
}
