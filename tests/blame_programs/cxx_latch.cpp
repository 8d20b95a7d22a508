// C++20 std::latch: per round, the main thread releases a worker through one latch (go) and waits
// on another (done) that the worker counts down when its work is done. Unbalanced: the worker's
// work before count_down is heavy (culprit_before_count_down) and the main thread's short, so the
// main thread waits on the latch. Balanced: both do the same work.
#include <latch>
#include <memory>
#include <thread>
#include <vector>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_before_count_down(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double latch_work(double x, long us) {
    BURN(x, us);
    return x;
}

struct Round {
    std::latch go{1}, done{1};
};

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    std::vector<std::unique_ptr<Round>> rounds;
    for (int r = 0; r < ROUNDS; r++) rounds.push_back(std::make_unique<Round>());
    double theirs = 0, mine = 0;
    std::thread worker([&] {
        for (int r = 0; r < ROUNDS; r++) {
            rounds[r]->go.wait();
            theirs += unbalanced ? culprit_before_count_down(r, 33000) : latch_work(r, 33000);
            rounds[r]->done.count_down();
        }
    });
    for (int r = 0; r < ROUNDS; r++) {
        rounds[r]->go.count_down();
        mine += latch_work(r, unbalanced ? 3000 : 33000);
        rounds[r]->done.wait();
    }
    worker.join();
    printf("%g\n", mine + theirs);
    return 0;
}
