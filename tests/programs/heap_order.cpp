// The same unordered_set insert benchmark run twice: first in a fresh heap, then after building and
// destroying large node-based containers, which leaves millions of free chunks in glibc's bins.
// Prints only deterministic lines, so its output can be compared with and without stallscope.
#include <stallscope.h>

#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <unordered_set>

static unsigned long insert_benchmark(int n) {
    std::unordered_set<int> set;
    for (int i = 0; i < n; i++) set.emplace(i * 7919);
    return set.size();
}

static unsigned long churn(int n) {
    std::map<int, int> tree;
    std::list<long> list;
    unsigned x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        tree.emplace(int(x >> 1), i);
        list.push_back(i);
    }
    return tree.size() + list.size();
}

int main(int argc, char **argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 1000000;
    unsigned long fresh, churned, after;
    {
        stallscope::Phase phase("insert");
        fresh = insert_benchmark(n);
    }
    {
        stallscope::Phase phase("build and destroy");
        churned = churn(2 * n);
    }
    {
        stallscope::Phase phase("insert");
        after = insert_benchmark(n);
    }
    stallscope_heap_snapshot("done");
    std::printf("fresh %lu, churned %lu, after %lu\n", fresh, churned, after);
    return 0;
}
