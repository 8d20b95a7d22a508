// Shared by the case studies in demos/: the command line (variant, size, threads), a checksum
// that every variant of a case computes the same way, and a wall clock.
//
//   PROGRAM VARIANT [--quick] [--threads N]
//
// The thread count comes from --threads, else the environment variable STALLSCOPE_THREADS (set by
// `stallscope bench --threads`), else the number of CPUs.
#ifndef STALLSCOPE_CASE_COMMON_H
#define STALLSCOPE_CASE_COMMON_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace cases {

struct Options {
    std::string variant;
    bool quick = false;
    unsigned threads = 1;
};

inline unsigned default_threads() {
    if (const char *env = std::getenv("STALLSCOPE_THREADS")) {
        int n = std::atoi(env);
        if (n > 0) return unsigned(n);
    }
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

// Parses the command line; exits with status 2 and a usage line on anything it does not know
// (so that `stallscope bench --order-effect` never mistakes a case program for another protocol).
inline Options parse(int argc, char **argv, const char *const *variants, const char *usage_extra) {
    Options o;
    o.threads = default_threads();
    bool known = false;
    if (argc > 1) {
        for (const char *const *v = variants; *v; v++) known |= std::strcmp(argv[1], *v) == 0;
    }
    for (int i = 2; known && i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) {
            o.quick = true;
        } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc && std::atoi(argv[i + 1]) > 0) {
            o.threads = unsigned(std::atoi(argv[++i]));
        } else {
            known = false;
        }
    }
    if (!known) {
        std::fprintf(stderr, "usage: %s {", argv[0]);
        for (const char *const *v = variants; *v; v++) std::fprintf(stderr, "%s%s", *v, v[1] ? "|" : "");
        std::fprintf(stderr, "} [--quick] [--threads N]%s\n", usage_extra);
        std::exit(2);
    }
    o.variant = argv[1];
    return o;
}

// FNV-1a, 64 bits.
inline uint64_t hash_bytes(const char *p, size_t n, uint64_t h = 1469598103934665603ull) {
    for (size_t i = 0; i < n; i++) {
        h ^= uint8_t(p[i]);
        h *= 1099511628211ull;
    }
    return h;
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The line every variant prints; tests and `stallscope demo` compare it between variants.
inline void print_checksum(uint64_t sum) { std::printf("checksum %016llx\n", (unsigned long long)sum); }

} // namespace cases

#endif
