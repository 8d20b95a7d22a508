// Formats numbers with sprintf in a loop, the way a text serializer does.
#include <stdio.h>
#include <string.h>

static size_t __attribute__((noinline)) serialize_objects(char *out, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(out + len % 4096, "%d %.3f\n", i & 1, i * 0.25);
    return len;
}

int main(void) {
    static char buffer[8192];
    size_t total = 0;
    for (int round = 0; round < 20; round++)
        total += serialize_objects(buffer, 10000);
    printf("%zu\n", total);
    return 0;
}
