// Overhead case for allocation stacks through deep C++ code (benches/unwind_overhead.sh): 25
// recursive frames, then 400,000 times a std::vector of 8 std::strings past the small-string
// size (4.8 million allocations through libstdc++, every stack about 32 frames deep).
#include <cstdio>
#include <string>
#include <vector>

static volatile unsigned long sink;

__attribute__((noinline)) void work(int n) {
    for (int i = 0; i < n; i++) {
        std::vector<std::string> v;
        for (int k = 0; k < 8; k++) v.emplace_back(40, 'a' + k);
        sink = sink + v.size();
    }
}

__attribute__((noinline)) void recurse(int depth, int n) {
    if (depth == 0) {
        work(n);
        return;
    }
    recurse(depth - 1, n);
    __asm__ volatile("" ::: "memory"); // not a tail call: keep the frame
}

int main() {
    recurse(25, 400000);
    printf("%lu\n", sink);
    return 0;
}
