/* A log mutex held across write + fdatasync: each thread computes a little, then appends a line
 * to a shared log file under a std::mutex (std::lock_guard) and makes it durable before
 * releasing the lock.
 *
 * Demonstrates: a lock held across I/O. The holder is blocked in fdatasync (a disk flush, ~ms)
 * while the other threads queue on the mutex, so more threads do not log faster.
 * Correct diagnosis: lock contention on log_mutex (a global: named by its symbol) at log_line
 * (log_fsync.cpp, the std::lock_guard line) -- the user frame, not __gthread_mutex_lock /
 * std::mutex::lock -- and the holder was in fdatasync (I/O) called from log_line while the others
 * waited: "held across fdatasync". Remedy: write/flush outside the lock (a queue and one writer
 * thread, group commit). State shares at 2 threads: each worker ~half waiting for the lock, the
 * rest mostly I/O (fdatasync, blocked in the kernel), little compute.
 * Usage: log_fsync [threads=2] [total lines=4000] [log file=/tmp/log_fsync.<pid>.log] */
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "truth.h"

static std::mutex log_mutex;
static int log_fd = -1;

static void log_line(const char *text, long n) {
    char line[128];
    int len = std::snprintf(line, sizeof line, "%s %ld\n", text, n);
    std::lock_guard<std::mutex> guard(log_mutex);
    if (write(log_fd, line, (size_t)len) != len) std::perror("write");
    fdatasync(log_fd);
}

__attribute__((noinline)) static double think(long i) {
    double x = (double)i;
    for (int k = 0; k < 20000; k++) x = x * 0.99999 + 1e-6;
    return x;
}

static void worker(long id, long lines) {
    truth_start();
    double sum = 0;
    for (long i = 0; i < lines; i++) {
        sum += think(i);
        log_line(sum > 0 ? "event" : "EVENT", id * 1000000 + i);
    }
    truth_end("worker");
}

int main(int argc, char **argv) {
    truth_start();
    long threads = arg_or(argc, argv, 1, 2);
    long total = arg_or(argc, argv, 2, 4000);
    std::string path = argc > 3 ? argv[3] : "/tmp/log_fsync." + std::to_string(getpid()) + ".log";
    log_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (log_fd < 0) {
        std::perror(path.c_str());
        return 1;
    }
    std::vector<std::thread> pool;
    for (long i = 0; i < threads; i++) pool.emplace_back(worker, i, total / threads);
    for (auto &t : pool) t.join();
    close(log_fd);
    if (argc <= 3) unlink(path.c_str());
    std::puts("logged");
    truth_end("main");
    return 0;
}
