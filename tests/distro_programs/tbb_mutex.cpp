// Two threads add to one counter under a tbb::mutex (or tbb::spin_mutex), built against Debian's
// shared libtbb (libtbb-dev: stripped libtbb.so.12). oneTBB's tbb::mutex spins, yields, then
// sleeps in libtbb's wait_on_address (a futex word of the waiting thread's own, woken by the
// holder's unlock); its spin_mutex only spins and yields. Each hold does some work, so the other
// thread waits for the lock. `quiet` gives each thread its own mutex: the same calls, no
// contention (the control). Every 16th hold also sleeps 0.5 ms, so that the other thread waits
// for the lock even on a machine too busy to run both at once.
//   tbb_mutex [contended|quiet] [mutex|spin] [threads] [rounds]
#include <oneapi/tbb/mutex.h> // Debian ships no tbb/mutex.h forwarder
#include <tbb/spin_mutex.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

static unsigned long work(unsigned long x, int n) {
    for (int i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

template <class M> struct alignas(64) Guarded {
    M mu;
    unsigned long value = 0;
};

template <class M> static unsigned long run(bool quiet, int threads, long rounds) {
    static Guarded<M> shared;
    std::vector<Guarded<M>> own(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            unsigned long x = t + 1;
            Guarded<M> &g = quiet ? own[t] : shared;
            for (long i = 0; i < rounds; i++) {
                x = work(x, 10000);
                typename M::scoped_lock lock(g.mu); // MARK lock
                g.value += work(x, 100000) & 1;
                if (i % 16 == 0) usleep(500);
            }
        });
    }
    for (auto &t : ts) t.join();
    unsigned long total = shared.value;
    for (auto &o : own) total += o.value;
    return total;
}

int main(int argc, char **argv) {
    bool quiet = argc > 1 && strcmp(argv[1], "quiet") == 0;
    bool spin = argc > 2 && strcmp(argv[2], "spin") == 0;
    int threads = argc > 3 ? atoi(argv[3]) : 2;
    long rounds = argc > 4 ? atol(argv[4]) : 2000;
    unsigned long total = spin ? run<tbb::spin_mutex>(quiet, threads, rounds) : run<tbb::mutex>(quiet, threads, rounds);
    printf("%lu\n", total);
    return 0;
}
