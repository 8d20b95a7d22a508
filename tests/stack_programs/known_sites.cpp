// Allocation sites whose call chains are known, for tests/stacks_alloc.rs. Built with
// g++ -O1 -g and without -fno-omit-frame-pointer: the stacks must come from .eh_frame unwinding.
// The test finds the lines by their MARK comments; the counts below are printed on stdout.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

static volatile unsigned long sink;

__attribute__((noinline)) void *helper(size_t n) {
    return malloc(n); // MARK helper
}

__attribute__((noinline)) void from_small(int n) {
    for (int i = 0; i < n; i++) {
        void *p = helper(48); // MARK from_small
        sink = sink + (unsigned long)p;
        free(p);
    }
}

__attribute__((noinline)) void from_large(int n) {
    for (int i = 0; i < n; i++) {
        void *p = helper(200000); // MARK from_large
        sink = sink + (unsigned long)p;
        free(p);
    }
}

static inline __attribute__((always_inline)) void *inlined_alloc(size_t n) {
    return calloc(1, n); // MARK inlined_alloc
}

__attribute__((noinline)) void from_inlined(int n) {
    for (int i = 0; i < n; i++) {
        void *p = inlined_alloc(96); // MARK from_inlined
        sink = sink + (unsigned long)p;
        free(p);
    }
}

__attribute__((noinline)) void make_strings(int n) {
    for (int i = 0; i < n; i++) {
        std::string s(100, 'a' + i % 26); // MARK make_strings
        sink = sink + s.size();
    }
}

__attribute__((noinline)) void parse_doubles(int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) {
        std::istringstream in("3.25");
        double d = 0;
        in >> d; // MARK parse_doubles
        sum += d;
    }
    sink = sink + (unsigned long)sum;
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    from_small(200000 * scale);
    from_large(3000 * scale);
    from_inlined(100000 * scale);
    make_strings(100000 * scale);
    parse_doubles(50000 * scale);
    printf("done\n");
    return 0;
}
