// Case study: benchmark order.
//
// An unordered_set<int> insert benchmark, run in a fresh heap and again after building and
// destroying large node-based containers (a std::map and a std::list), which leaves millions of
// free chunks in glibc's bins for the next case to wade through. The original: 565 ms against
// 1143 ms for the same insert, 231 ms against 916 ms of it in malloc.
//
//   slow   insert, build and destroy, insert again: the second insert runs after the churn
//   fixed  insert, insert again, then build and destroy: the same work, both inserts in a fresh heap
//          (the first insert's set is kept until the second is done: freed, its nodes would wait
//          in the fast bins and the second insert would begin in a heap the first left behind)
//   trim   like slow, with malloc_trim(0) after the churn (it consolidates and returns free memory)
//
// The time printed is the second insert's; the profile's phases compare it with the first.
//
// Each of the --threads threads runs the variant on its own data, the first one on the main thread
// (glibc's main arena, where the benchmark of the original story ran), the others in their own
// arenas.
// Phases (include/stallscope.h) name each step for `stallscope run`.
//
// It also speaks the stallscope order-effect protocol (docs/BENCH.md), for
// `stallscope bench --order-effect 'bench_order [--quick]'`:
//   --stallscope-list            prints the cases: insert, build_and_destroy, insert_again
//   --stallscope-run CASE...     runs those cases in order in this process, one line per case:
//                                CASE<TAB>NANOSECONDS
#include "case_common.h"

#include <list>
#include <malloc.h>
#include <map>
#include <stallscope.h>
#include <unordered_set>
#include <vector>

// With `keep`, the set is handed over instead of freed.
static uint64_t insert_benchmark(int n, unsigned seed, std::unordered_set<int> *keep = nullptr) {
    stallscope::Phase phase("insert");
    std::unordered_set<int> set;
    for (int i = 0; i < n; i++) set.emplace(int(unsigned(i) * 7919u + seed));
    uint64_t size = set.size();
    if (keep) keep->swap(set);
    return size;
}

static uint64_t build_and_destroy(int n, unsigned seed) {
    stallscope::Phase phase("build and destroy");
    std::map<int, int> tree;
    std::list<long> list;
    unsigned x = 12345u + seed;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        tree.emplace(int(x >> 1), i);
        list.push_back(long(x));
    }
    // Sorting relinks the nodes in random address order: destroying the list then frees its
    // chunks scattered, and the next inserts reuse them in that order, missing the cache.
    list.sort();
    return tree.size() + list.size();
}

static uint64_t run_case(const std::string &name, int n, unsigned seed) {
    if (name == "insert" || name == "insert_again") return insert_benchmark(n, seed);
    if (name == "build_and_destroy") return build_and_destroy(n, seed);
    std::fprintf(stderr, "unknown case %s\n", name.c_str());
    std::exit(2);
}

// Extra arguments of the benchmark command (here --quick) come before the protocol's flag.
static int protocol(int argc, char **argv) {
    static const char *const names[] = {"insert", "build_and_destroy", "insert_again"};
    bool quick = false, list = false, run = false;
    std::vector<std::string> selected;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--stallscope-list") == 0) list = true;
        else if (std::strcmp(argv[i], "--stallscope-run") == 0) run = true;
        else if (run) selected.push_back(argv[i]);
        else return std::fprintf(stderr, "unknown argument %s\n", argv[i]), 2;
    }
    if (list) {
        for (const char *name : names) std::printf("%s\n", name);
        return 0;
    }
    const int n = quick ? 150000 : 300000;
    for (const std::string &name : selected) {
        auto start = std::chrono::steady_clock::now();
        run_case(name, n, 0);
        std::printf("%s\t%.0f\n", name.c_str(), cases::seconds_since(start) * 1e9);
    }
    return 0;
}

static bool protocol_requested(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (std::strcmp(argv[i], "--stallscope-list") == 0 || std::strcmp(argv[i], "--stallscope-run") == 0) return true;
    return false;
}

int main(int argc, char **argv) {
    if (protocol_requested(argc, argv)) return protocol(argc, argv);
    static const char *const variants[] = {"slow", "fixed", "trim", nullptr};
    cases::Options opt = cases::parse(argc, argv, variants, "\n       or: [--quick] --stallscope-list | [--quick] --stallscope-run CASE...");
    const int n = opt.quick ? 150000 : 300000;

    std::vector<uint64_t> results(opt.threads);
    std::vector<double> insert_seconds(opt.threads);
    auto start = std::chrono::steady_clock::now();
    auto worker = [&](unsigned t) {
            std::unordered_set<int> first;
            uint64_t r = insert_benchmark(n, t, opt.variant == "fixed" ? &first : nullptr);
            if (opt.variant != "fixed") {
                r += build_and_destroy(n, t);
                if (opt.variant == "trim") malloc_trim(0);
            }
            auto insert_start = std::chrono::steady_clock::now();
            r += insert_benchmark(n, t);
            insert_seconds[t] = cases::seconds_since(insert_start);
            std::unordered_set<int>().swap(first);
            if (opt.variant == "fixed") r += build_and_destroy(n, t);
            results[t] = r;
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < opt.threads; t++) threads.emplace_back(worker, t);
    worker(0);
    for (auto &t : threads) t.join();
    double elapsed = cases::seconds_since(start);

    uint64_t sum = 0;
    for (uint64_t r : results) sum = sum * 1000003u + r;
    double insert_ms = 0;
    for (double s : insert_seconds) insert_ms += s * 1e3 / opt.threads;
    cases::print_checksum(sum);
    std::printf("bench_order %s: second insert of %d ints %.0f ms (mean per thread), total %.0f ms, %u threads\n",
                opt.variant.c_str(), n, insert_ms, elapsed * 1e3, opt.threads);
    return 0;
}
