// Two std::threads, each making exactly 10000 `new int[6]` (24 bytes) with their `delete[]`, and
// taking one shared std::mutex 50000 times through std::lock_guard. Prints the mutex's address.
// With the argument "empty" the same threads are started but do nothing (the C++ runtime's own
// allocations, such as std::thread's state, are then the baseline).
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

static std::mutex shared;
static int *volatile escape[2][100]; // one row per thread
static volatile unsigned long counter;

static void worker(int row, bool empty) {
    if (empty) return;
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 100; i++) {
            escape[row][i] = new int[6];
            escape[row][i][5] = i;
        }
        for (int i = 0; i < 100; i++) {
            counter += static_cast<unsigned long>(escape[row][i][5]);
            delete[] escape[row][i];
        }
    }
    for (int i = 0; i < 50000; i++) {
        std::lock_guard<std::mutex> guard(shared);
        counter = counter + 1;
    }
}

int main(int argc, char **argv) {
    bool empty = argc > 1 && std::strcmp(argv[1], "empty") == 0;
    std::thread a(worker, 0, empty), b(worker, 1, empty);
    a.join();
    b.join();
    std::printf("mutex %p\n", static_cast<void *>(&shared));
    return 0;
}
