// Two threads copying one std::shared_ptr: every copy is a locked increment (and a decrement)
// of a reference count on one cache line. No lock, no wait: only slow instructions.
#include <cstdio>
#include <memory>
#include <thread>

static std::shared_ptr<int> shared = std::make_shared<int>(42);

static long copy_loop() {
    long sum = 0;
    for (int i = 0; i < 20000000; i++) {
        std::shared_ptr<int> copy = shared;
        sum += *copy;
    }
    return sum;
}

int main() {
    long a = 0, b = 0;
    std::thread t1([&] { a = copy_loop(); });
    std::thread t2([&] { b = copy_loop(); });
    t1.join();
    t2.join();
    std::printf("%ld\n", a + b);
    return 0;
}
