// Case study: parallel text serialization.
//
// About a million small game objects (a bool and a float each, 1024 pages of 1024) are written as
// text, page by page, into one preallocated buffer, by one thread per core (--threads 1: in
// sequence). The original hunt (Windows, debug C runtime): sprintf took a heap lock on every call,
// so 12 cores were barely faster than one.
//
//   slow         sprintf into the buffer
//   fixed        std::to_chars into the buffer: neither allocates nor locks
//   shared_file  fprintf to one FILE shared by all threads: every call takes the FILE's
//                glibc-internal lock, the Linux form of the same story
//
// Every variant prints the same checksum: a sum of hashes of the lines written, which does not
// depend on the order in which threads wrote them.
#include "case_common.h"

#include <atomic>
#include <charconv>
#include <vector>

struct GameObject {
    bool active;
    float value;
};

static const size_t kPageObjects = 1024;
static const size_t kMaxLine = 32; // "1 -123456.789\n" and then some

static std::vector<GameObject> make_objects(size_t pages) {
    std::vector<GameObject> objects(pages * kPageObjects);
    uint32_t x = 2463534242u;
    for (auto &o : objects) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        o.active = x & 1;
        o.value = float(int32_t(x >> 8) % 2000000) / 16.0f;
    }
    return objects;
}

// One page as text with sprintf; returns the bytes written.
static size_t page_sprintf(const GameObject *objs, char *out) {
    char *p = out;
    for (size_t i = 0; i < kPageObjects; i++)
        p += std::sprintf(p, "%d %.3f\n", objs[i].active ? 1 : 0, double(objs[i].value));
    return size_t(p - out);
}

// The same text with std::to_chars.
static size_t page_to_chars(const GameObject *objs, char *out) {
    char *p = out;
    for (size_t i = 0; i < kPageObjects; i++) {
        *p++ = objs[i].active ? '1' : '0';
        *p++ = ' ';
        p = std::to_chars(p, out + kPageObjects * kMaxLine, double(objs[i].value),
                          std::chars_format::fixed, 3).ptr;
        *p++ = '\n';
    }
    return size_t(p - out);
}

static void page_fprintf(const GameObject *objs, FILE *f) {
    for (size_t i = 0; i < kPageObjects; i++)
        std::fprintf(f, "%d %.3f\n", objs[i].active ? 1 : 0, double(objs[i].value));
}

static uint64_t line_hash_sum(const char *text, size_t n) {
    uint64_t sum = 0;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\n') {
            sum += cases::hash_bytes(text + start, i - start);
            start = i + 1;
        }
    }
    return sum;
}

int main(int argc, char **argv) {
    static const char *const variants[] = {"slow", "fixed", "shared_file", nullptr};
    cases::Options opt = cases::parse(argc, argv, variants, "");
    const size_t pages = opt.quick ? 128 : 1024;
    const int repeats = opt.quick ? 1 : 2; // the buffer is written this many times over
    std::vector<GameObject> objects = make_objects(pages);

    std::vector<char> buffer(pages * kPageObjects * kMaxLine);
    std::vector<size_t> page_len(pages);
    FILE *shared = opt.variant == "shared_file" ? std::tmpfile() : nullptr;
    if (opt.variant == "shared_file" && !shared) {
        std::perror("tmpfile");
        return 1;
    }

    auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; r++) {
        if (shared) std::rewind(shared);
        std::atomic<size_t> next_page{0};
        auto worker = [&] {
            for (size_t page; (page = next_page.fetch_add(1)) < pages;) {
                const GameObject *objs = &objects[page * kPageObjects];
                char *out = &buffer[page * kPageObjects * kMaxLine];
                if (opt.variant == "slow") page_len[page] = page_sprintf(objs, out);
                else if (opt.variant == "fixed") page_len[page] = page_to_chars(objs, out);
                else page_fprintf(objs, shared);
            }
        };
        std::vector<std::thread> threads;
        for (unsigned t = 1; t < opt.threads; t++) threads.emplace_back(worker);
        worker();
        for (auto &t : threads) t.join();
    }
    double elapsed = cases::seconds_since(start);

    uint64_t sum = 0;
    if (shared) {
        std::fflush(shared);
        long size = std::ftell(shared);
        std::vector<char> text(size_t(size > 0 ? size : 0));
        std::rewind(shared);
        if (std::fread(text.data(), 1, text.size(), shared) != text.size()) {
            std::perror("reading back the shared file");
            return 1;
        }
        sum = line_hash_sum(text.data(), text.size());
        std::fclose(shared);
    } else {
        for (size_t page = 0; page < pages; page++)
            sum += line_hash_sum(&buffer[page * kPageObjects * kMaxLine], page_len[page]);
    }
    cases::print_checksum(sum);
    std::printf("serialize %s: %zu objects x %d, %u threads, %.0f ms\n", opt.variant.c_str(),
                objects.size(), repeats, opt.threads, elapsed * 1e3);
    return 0;
}
