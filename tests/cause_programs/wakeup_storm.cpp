// One condition variable, notify_all for every item, many consumers: each item wakes every idle
// consumer, one of them takes it, the others find the queue empty and wait again.
//
// Demonstrates: a wake-up storm. With 16 consumers each notify_all wakes up to 16 threads for one
// item; they queue for the mutex one after the other (the producer too) and all but one go back
// to sleep. Correct diagnosis: wake-up storm on `queue_cv`, many wake-ups per useful one, woken
// by `put_item` (wakeup_storm.cpp) and waiting in `take_item`; remedy: notify_one, a queue per
// consumer. With `one` as the third argument it calls notify_one: the clean twin (no finding).
// Each item takes the producer 1,600 steps to make, so the consumers are back waiting before
// the next broadcast, on a busy machine too (tests/thread_use_causes.rs).
// Usage: wakeup_storm [consumers=16] [items=40000] [all|one]
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex queue_mutex;
static std::condition_variable queue_cv;
static std::deque<long> queue;
static bool done;
static bool notify_every;

__attribute__((noinline)) static long make_item(long i) {
    unsigned long s = (unsigned long)i * 2654435761u;
    for (int k = 0; k < 1600; k++) s = s * 6364136223846793005ul + 1442695040888963407ul;
    return (long)(s >> 1);
}

__attribute__((noinline)) static void put_item(long v) {
    {
        std::lock_guard<std::mutex> lock(queue_mutex);
        queue.push_back(v);
    }
    if (notify_every)
        queue_cv.notify_all();
    else
        queue_cv.notify_one();
}

__attribute__((noinline)) static bool take_item(long *v) {
    std::unique_lock<std::mutex> lock(queue_mutex);
    queue_cv.wait(lock, [] { return !queue.empty() || done; });
    if (queue.empty()) return false;
    *v = queue.front();
    queue.pop_front();
    return true;
}

static volatile long sink;

static void consumer() {
    long v, sum = 0;
    while (take_item(&v)) {
        for (int k = 0; k < 200; k++) v = v * 31 + k;
        sum += v;
    }
    sink += sum;
}

int main(int argc, char **argv) {
    int consumers = argc > 1 ? atoi(argv[1]) : 16;
    long items = argc > 2 ? atol(argv[2]) : 40000;
    notify_every = !(argc > 3 && strcmp(argv[3], "one") == 0);
    if (consumers < 1) consumers = 1;
    if (consumers > 256) consumers = 256;
    std::vector<std::thread> pool;
    for (int i = 0; i < consumers; i++) pool.emplace_back(consumer);
    for (long i = 0; i < items; i++) put_item(make_item(i));
    {
        std::lock_guard<std::mutex> lock(queue_mutex);
        done = true;
    }
    queue_cv.notify_all();
    for (auto &t : pool) t.join();
    printf("done %ld\n", (long)sink);
    return 0;
}
