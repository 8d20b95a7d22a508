// Two threads add to one counter under an absl::Mutex, built against Debian's shared libabsl
// (libabsl-dev: stripped libabsl_synchronization.so.20220623, its inline namespace Debian's
// absl::debian3 where upstream's is absl::lts_20220623). Each hold does some work, so the other
// thread waits for the lock (abseil parks it on a futex word of its own through
// syscall(SYS_futex)). `quiet` gives each thread its own mutex: the same calls, no contention
// (the control). Every 16th hold also sleeps 0.5 ms, so that the other thread waits for the lock
// even on a machine too busy to run both at once.
//   absl_mutex [contended|quiet] [threads] [rounds]
#include <absl/synchronization/mutex.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <vector>

static absl::Mutex shared_mu;
static unsigned long counter;

static unsigned long work(unsigned long x, int n) {
    for (int i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

struct Own {
    absl::Mutex mu;
    unsigned long value = 0;
    char pad[64];
};

int main(int argc, char **argv) {
    bool quiet = argc > 1 && strcmp(argv[1], "quiet") == 0;
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    long rounds = argc > 3 ? atol(argv[3]) : 2000;
    std::vector<Own> own(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            unsigned long x = t + 1;
            for (long i = 0; i < rounds; i++) {
                x = work(x, 10000);
                if (quiet) {
                    absl::MutexLock l(&own[t].mu);
                    own[t].value += work(x, 100000) & 1;
                    if (i % 16 == 0) usleep(500);
                } else {
                    absl::MutexLock l(&shared_mu); // MARK lock
                    counter += work(x, 100000) & 1;
                    if (i % 16 == 0) usleep(500);
                }
            }
        });
    }
    for (auto &t : ts) t.join();
    unsigned long total = counter;
    for (auto &o : own) total += o.value;
    printf("%lu\n", total);
    return 0;
}
