// A Google Benchmark program with a genuine order effect, for `stallscope bench
// --order-effect` tests.
//
// BM_FragmentHeap allocates a few million list-node-sized blocks, frees them in a
// shuffled order and keeps every other one alive (as a cache would). That leaves
// glibc's heap full of isolated holes whose free lists are in random address order.
// BM_ListWalk builds its list once per process and then walks it. In a fresh process
// the nodes come from fresh memory, one after the other, and the walk streams
// through memory; after BM_FragmentHeap the nodes fill the scattered holes and every
// step of the walk is a cache miss. Same code, same data, several times slower --
// only because of what ran before it in the same process.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <random>
#include <vector>

namespace {

constexpr std::size_t kBlocks = 2u << 20;       // 2 Mi blocks of 24 bytes
constexpr std::size_t kListLength = 256u << 10; // 256 Ki nodes
std::vector<void*>* kept_alive = nullptr;       // the "cache" that pins half the blocks

void FragmentHeapOnce() {
  if (kept_alive != nullptr) return;
  std::vector<void*> blocks(kBlocks);
  for (auto& b : blocks) b = std::malloc(24);
  std::mt19937_64 rng(42);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  kept_alive = new std::vector<void*>();
  kept_alive->reserve(kBlocks / 2);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    // Keep every other block in address order alive so that freed ones cannot
    // coalesce; free the rest in shuffled order.
    if ((reinterpret_cast<std::uintptr_t>(blocks[i]) / 32) % 2 == 0) {
      kept_alive->push_back(blocks[i]);
    } else {
      std::free(blocks[i]);
    }
  }
}

void BM_FragmentHeap(benchmark::State& state) {
  FragmentHeapOnce();
  std::uint64_t sum = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < 1024; ++i) sum += reinterpret_cast<std::uintptr_t>((*kept_alive)[i]);
    benchmark::DoNotOptimize(sum);
  }
}

std::list<std::uint64_t>& TheList() {
  static std::list<std::uint64_t>* list = [] {
    auto* l = new std::list<std::uint64_t>();
    for (std::size_t i = 0; i < kListLength; ++i) l->push_back(i);
    return l;
  }();
  return *list;
}

void BM_ListWalk(benchmark::State& state) {
  auto& list = TheList();
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (auto v : list) sum += v;
    benchmark::DoNotOptimize(sum);
  }
}

}  // namespace

// Registration order is run order: the heap is fragmented before the walk.
BENCHMARK(BM_FragmentHeap)->Iterations(100);
BENCHMARK(BM_ListWalk)->Iterations(5);

BENCHMARK_MAIN();
