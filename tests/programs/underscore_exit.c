/* Makes 1000 malloc(40) (never freed) and leaves with _exit(3), which skips atexit handlers and
 * destructors. With the argument "empty" it allocates nothing before _exit(3). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile keep[1000];

int main(int argc, char **argv) {
    if (!(argc > 1 && strcmp(argv[1], "empty") == 0)) {
        for (int i = 0; i < 1000; i++) {
            keep[i] = malloc(40);
            memset(keep[i], 1, 40);
        }
    }
    _exit(3);
}
