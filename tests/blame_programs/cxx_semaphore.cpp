// C++20 std::binary_semaphore (counting_semaphore<1>) guarding a step only one thread at a time may
// run; two threads, each taking steps. Unbalanced: the guarded step is the heavy part
// (culprit_step), so the threads take turns and each waits while the other runs it. Balanced: the
// heavy part is outside the semaphore and the guarded step is tiny.
#include <semaphore>
#include <thread>
#include "burn.h"

#define STEPS 50

__attribute__((noinline)) double culprit_step(double x, long us) {
    BURN(x, us);
    return x;
}
__attribute__((noinline)) double own_work(double x, long us) {
    BURN(x, us);
    return x;
}

static std::binary_semaphore turn(1);

static double run(int unbalanced, int id) {
    double total = 0;
    for (int s = 0; s < STEPS; s++) {
        double x = own_work(s + id, unbalanced ? 300 : 6500);
        turn.acquire();
        total += unbalanced ? culprit_step(x, 3500) : own_work(x, 50);
        turn.release();
    }
    return total;
}

int main(int argc, char **argv) {
    int unbalanced = blame_variant(argc, argv);
    double other = 0;
    std::thread t([&] { other = run(unbalanced, 1); });
    double mine = run(unbalanced, 0);
    t.join();
    printf("%g\n", mine + other);
    return 0;
}
