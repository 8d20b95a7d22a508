/* CPU samples land anywhere in these functions: in prologues and epilogues (pushes of callee-saved
 * registers, a frame pointer set up and torn down, a large frame allocated), in leaf functions with
 * no frame at all, in a function with a frame pointer and one without. Each function has a fixed
 * set of callers, so every sampled stack can be checked against the call graph:
 *   main -> with_fp -> big_frame -> pushes -> leaf
 *   main -> pushes -> leaf
 *   main -> big_frame (directly too)
 * Usage: interrupted_frames [iterations=3000000] */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long leaf(long x) { return x * 2654435761u + 1; }

/* Many live values across the call: callee-saved registers pushed and popped around it. */
__attribute__((noinline)) long pushes(long x) {
    long a = x + 1, b = x * 3, c = x ^ 5, d = x - 7, e = x | 9, f = x & 11;
    long r = leaf(x);
    return r + a * b + c * d + e * f;
}

/* A large frame: the stack pointer moves by more than a page in the prologue. */
__attribute__((noinline)) long big_frame(long x) {
    volatile char buf[5000];
    buf[x % 5000] = (char)x;
    buf[(x * 7) % 5000] = (char)(x >> 3);
    return pushes(x + buf[x % 5000]) + buf[(x * 7) % 5000];
}

__attribute__((noinline, optimize("no-omit-frame-pointer"))) long with_fp(long x) {
    long r = big_frame(x);
    sink = r;
    return r + 1;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 3000000;
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += with_fp(i);
        s += pushes(i);
        if ((i & 7) == 0) s += big_frame(i);
    }
    printf("%ld\n", s & 1);
    return 0;
}
