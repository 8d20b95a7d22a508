// C++20 std::barrier: two threads, one phase per round, each thread arrive_and_wait()s at the end
// of its phase. Unbalanced: the second thread's phase is heavy (culprit_phase) while the main
// thread's is short, so the main thread waits at the barrier. Balanced: even phases.
#include <barrier>
#include <thread>
#include "burn.h"

#define ROUNDS 10

__attribute__((noinline)) double culprit_phase(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double phase_work(double x, long us) {
    BURN(x, us);
    return x;
}

static double run(std::barrier<> &sync, int unbalanced, int id) {
    double total = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (!unbalanced)
            total += phase_work(round, 33000);
        else if (id == 1)
            total += culprit_phase(round, 33000);
        else
            total += phase_work(round, 3000);
        sync.arrive_and_wait();
    }
    return total;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    std::barrier sync(2);
    double other = 0;
    std::thread t([&] { other = run(sync, unbalanced, 1); });
    double mine = run(sync, unbalanced, 0);
    t.join();
    printf("%g\n", mine + other);
    return 0;
}
