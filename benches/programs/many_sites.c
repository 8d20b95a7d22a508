/* Allocates from argv[1] (default 2048) distinct call stacks, once each: a walk of depth 11 down
 * two functions chosen by the bits of the stack's number, then a 4 MiB malloc and free (sampled
 * for its stack with probability 1 - e^-8 at the default 512 KiB per stack), so that every stack
 * is new to the interposer's site table. What the table's pages cost a program with many
 * allocation sites: benches/start_cpu.py --program benches/programs/many_sites. */
#include <stdio.h>
#include <stdlib.h>

static void walk_a(unsigned bits, int depth);
static void walk_b(unsigned bits, int depth);

static void __attribute__((noinline)) leaf(void) {
    void *volatile p = malloc(4u << 20);
    free(p);
}

/* Two functions of the same body: each level's return address says which one called. */
#define WALK(name)                                                                                 \
    static void __attribute__((noinline)) name(unsigned bits, int depth) {                         \
        if (depth == 0) {                                                                          \
            leaf();                                                                                \
        } else if (bits & 1) {                                                                     \
            walk_b(bits >> 1, depth - 1);                                                          \
        } else {                                                                                   \
            walk_a(bits >> 1, depth - 1);                                                          \
        }                                                                                          \
        __asm__ volatile("" ::: "memory"); /* not a tail call: each level keeps its frame */       \
    }
WALK(walk_a)
WALK(walk_b)

int main(int argc, char **argv) {
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2048;
    if (n > 2048) n = 2048; /* 11 bits of choices */
    for (unsigned i = 0; i < n; i++) walk_a(i, 11);
    printf("%u stacks\n", n);
    return 0;
}
