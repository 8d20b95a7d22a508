// istringstream parsing from 2 threads after std::locale::global(): every std::locale() then
// takes libstdc++'s global locale mutex (the C++ streams case, reproduced on Linux). stallscope
// should name that mutex as libstdc++'s, once, never as a lock inside the C library.
#include <locale>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstdlib>
static long parse_all(long n) {
    long sum = 0;
    for (long i = 0; i < n; i++) {
        std::istringstream in("12 34 56");  // MARK parse
        long a, b, c; in >> a >> b >> c; sum += a + b + c;
    }
    return sum;
}
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    bool global = argc > 2;
    if (global) std::locale::global(std::locale("C.UTF-8"));
    std::vector<std::thread> ts; std::vector<long> out(threads);
    for (int t = 0; t < threads; t++) ts.emplace_back([&, t] { out[t] = parse_all(300000); });
    for (auto &t : ts) t.join();
    long s = 0; for (long v : out) s += v; printf("%ld\n", s);
}
