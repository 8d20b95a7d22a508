/* Many distinct allocation stacks: every path through DEPTH levels of two functions (left or
 * right) ends in malloc+free, so there are 2^DEPTH stacks, for the HTML page's size on a
 * profile with thousands of stacks (tests/export_html.rs). */
#include <stdlib.h>

#ifndef DEPTH
#define DEPTH 12
#endif

static volatile long sink;

__attribute__((noinline)) static void walk(unsigned path, int level);

__attribute__((noinline)) static void left(unsigned path, int level) {
    walk(path, level + 1);
    sink++; /* not a tail call: keeps this frame on the stack */
}

__attribute__((noinline)) static void right(unsigned path, int level) {
    walk(path, level + 1);
    sink++;
}

__attribute__((noinline)) static void walk(unsigned path, int level) {
    if (level == DEPTH) {
        char *p = malloc(16 + (path & 63));
        p[0] = (char)path;
        sink += p[0];
        free(p);
        return;
    }
    if (path >> level & 1)
        right(path, level);
    else
        left(path, level);
}

int main(void) {
    for (int round = 0; round < 64; round++)
        for (unsigned path = 0; path < 1u << DEPTH; path++)
            walk(path, 0);
    return 0;
}
