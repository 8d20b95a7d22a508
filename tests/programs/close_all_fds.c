/* Closes every descriptor from 3 to 4095 between two batches of allocations, as daemons and
 * some servers do at start-up: 1000 malloc(40) before, 2000 after (never freed). Prints "done". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[3000];

int main(void) {
    for (int i = 0; i < 1000; i++) keep[i] = malloc(40);
    for (int fd = 3; fd < 4096; fd++) close(fd);
    for (int i = 1000; i < 3000; i++) keep[i] = malloc(40);
    printf("done\n");
    return 0;
}
