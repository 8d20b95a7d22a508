// Case study: small strings.
//
// A tokenizer over a generated PDF-like text keeps every token (names, numbers, operators: mostly
// a few bytes) as a string. The original hunt: 90% of the strings were 16 bytes or less, and a
// small-buffer string cut string allocations by 45% and load time by 10%.
//
//   slow   a string class costing two allocations per token: `new HeapString` holding a
//          separately allocated `char *` buffer
//   fixed  std::string by value: tokens up to 15 bytes live inside the object (small-buffer
//          optimisation), no allocation at all
//   pool   the slow variant's two-object layout, but both from a per-thread bitmap pool of
//          32-byte blocks (larger buffers still come from malloc)
//
// Each thread tokenizes its share of the text; every variant prints the same checksum of the
// tokens it kept (their count plus the sum of their hashes).
#include "case_common.h"

#include <memory>
#include <vector>

// The "two allocations" string: the object itself, and its buffer.
class HeapString {
public:
    HeapString(const char *p, size_t n) : size_(n), data_(new char[n + 1]) {
        std::memcpy(data_, p, n);
        data_[n] = 0;
    }
    ~HeapString() { delete[] data_; }
    HeapString(const HeapString &) = delete;
    HeapString &operator=(const HeapString &) = delete;
    const char *data() const { return data_; }
    size_t size() const { return size_; }

private:
    size_t size_;
    char *data_;
};

// Fixed-size blocks of 32 bytes, 63 to a 2 KiB chunk (64 chunks to a slab) whose first 32 bytes hold a bitmap of the
// blocks in use; a block's chunk is found by rounding its address down. Never shared between
// threads; larger requests go to operator new.
class BitmapPool {
public:
    static const size_t kBlock = 32;
    ~BitmapPool() {
        for (Chunk *slab : slabs_) delete[] slab;
    }
    void *allocate(size_t n) {
        if (n > kBlock) return ::operator new(n);
        if (!current_ || current_->used == kFull) {
            if (!with_space_.empty()) {
                current_ = with_space_.back();
                with_space_.pop_back();
            } else {
                if (slab_used_ == kSlabChunks) {
                    slabs_.push_back(new Chunk[kSlabChunks]);
                    slab_used_ = 0;
                }
                current_ = &slabs_.back()[slab_used_++];
            }
        }
        int bit = __builtin_ctzll(~current_->used);
        current_->used |= 1ull << bit;
        return current_->blocks[bit];
    }
    void deallocate(void *p, size_t n) {
        if (n > kBlock) return ::operator delete(p);
        Chunk *c = reinterpret_cast<Chunk *>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(sizeof(Chunk) - 1));
        int bit = int((static_cast<char *>(p) - c->blocks[0]) / kBlock);
        if (c->used == kFull && c != current_) with_space_.push_back(c);
        c->used &= ~(1ull << bit);
    }

private:
    static const uint64_t kFull = (1ull << 63) - 1;
    struct alignas(2048) Chunk {
        uint64_t used = 0;
        char pad[kBlock - sizeof(uint64_t)];
        char blocks[63][kBlock];
    };
    static_assert(sizeof(Chunk) == 2048, "a chunk is found by aligning a block's address");
    static const size_t kSlabChunks = 64; // chunks come from the system 128 KiB at a time
    std::vector<Chunk *> slabs_;
    size_t slab_used_ = kSlabChunks;
    std::vector<Chunk *> with_space_;
    Chunk *current_ = nullptr;
};

// The slow variant's layout (object + buffer), both placed in a pool.
struct PooledString {
    size_t size;
    char *data;
};

static std::string make_pdf_like(size_t objects) {
    static const char *const names[] = {"/Type", "/Page", "/Font", "/Subtype", "/Type1", "/BaseFont",
                                        "/Helvetica", "/MediaBox", "/Contents", "/Resources",
                                        "/Length", "/Filter", "/FlateDecode", "/Parent", "/Kids",
                                        "/ProcSet", "/PDF", "/Text", "/XObject", "/Annots"};
    static const char *const ops[] = {"BT", "ET", "Tf", "Td", "Tj", "re", "f", "q", "Q", "cm", "obj", "endobj", "R"};
    std::string s;
    s.reserve(objects * 200);
    uint32_t x = 88172645u;
    auto rnd = [&] { return x ^= x << 13, x ^= x >> 17, x ^= x << 5, x; };
    char num[64];
    for (size_t i = 0; i < objects; i++) {
        s += std::to_string(i + 1) + " 0 obj\n<< ";
        for (int k = 0; k < 12; k++) {
            uint32_t r = rnd();
            s += names[r % 20];
            s += ' ';
            switch ((r >> 8) % 4) {
            case 0: std::snprintf(num, sizeof num, "%u", (r >> 12) % 1000); break;
            case 1: std::snprintf(num, sizeof num, "%u 0 R", (r >> 12) % 5000); break;
            case 2: std::snprintf(num, sizeof num, "[0 0 %u %u]", 400 + (r >> 12) % 400, 600 + (r >> 20) % 400); break;
            default: std::snprintf(num, sizeof num, "(text-run-%u-of-a-longer-string)", (r >> 12) % 100000); break;
            }
            s += num;
            s += ' ';
            s += ops[(r >> 24) % 13];
            s += '\n';
        }
        s += ">>\nendobj\n";
    }
    return s;
}

static bool is_delim(char c) { return c == ' ' || c == '\n' || c == '[' || c == ']' || c == '<' || c == '>'; }

// Calls emit(pointer, length) for every token of text[begin, end).
template <class Emit> static void tokenize(const std::string &text, size_t begin, size_t end, Emit emit) {
    size_t i = begin;
    while (i < end) {
        while (i < end && is_delim(text[i])) i++;
        size_t start = i;
        while (i < end && !is_delim(text[i])) i++;
        if (i > start) emit(text.data() + start, i - start);
    }
}

static uint64_t tokenize_slow(const std::string &text, size_t begin, size_t end) {
    std::vector<HeapString *> tokens;
    tokenize(text, begin, end, [&](const char *p, size_t n) { tokens.push_back(new HeapString(p, n)); });
    uint64_t h = tokens.size();
    for (HeapString *t : tokens) h += cases::hash_bytes(t->data(), t->size());
    for (HeapString *t : tokens) delete t;
    return h;
}

static uint64_t tokenize_fixed(const std::string &text, size_t begin, size_t end) {
    std::vector<std::string> tokens;
    tokenize(text, begin, end, [&](const char *p, size_t n) { tokens.emplace_back(p, n); });
    uint64_t h = tokens.size();
    for (const std::string &t : tokens) h += cases::hash_bytes(t.data(), t.size());
    return h;
}

static uint64_t tokenize_pool(const std::string &text, size_t begin, size_t end) {
    BitmapPool pool;
    std::vector<PooledString *> tokens;
    tokenize(text, begin, end, [&](const char *p, size_t n) {
        auto *s = static_cast<PooledString *>(pool.allocate(sizeof(PooledString)));
        s->size = n;
        s->data = static_cast<char *>(pool.allocate(n + 1));
        std::memcpy(s->data, p, n);
        s->data[n] = 0;
        tokens.push_back(s);
    });
    uint64_t h = tokens.size();
    for (PooledString *t : tokens) h += cases::hash_bytes(t->data, t->size);
    for (PooledString *t : tokens) {
        pool.deallocate(t->data, t->size + 1);
        pool.deallocate(t, sizeof(PooledString));
    }
    return h;
}

int main(int argc, char **argv) {
    static const char *const variants[] = {"slow", "fixed", "pool", nullptr};
    cases::Options opt = cases::parse(argc, argv, variants, "");
    const size_t objects = opt.quick ? 8000 : 60000;
    const std::string text = make_pdf_like(objects);

    // Chunk boundaries on whitespace, so that every variant and thread count sees the same tokens.
    std::vector<size_t> bounds{0};
    for (unsigned t = 1; t < opt.threads; t++) {
        size_t b = std::max(bounds.back(), text.size() * t / opt.threads);
        while (b < text.size() && text[b] != '\n') b++;
        bounds.push_back(b);
    }
    bounds.push_back(text.size());

    auto start = std::chrono::steady_clock::now();
    std::vector<uint64_t> chunk_hash(opt.threads);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < opt.threads; t++) {
        threads.emplace_back([&, t] {
            size_t b = bounds[t], e = bounds[t + 1];
            if (opt.variant == "slow") chunk_hash[t] = tokenize_slow(text, b, e);
            else if (opt.variant == "fixed") chunk_hash[t] = tokenize_fixed(text, b, e);
            else chunk_hash[t] = tokenize_pool(text, b, e);
        });
    }
    for (auto &t : threads) t.join();
    double elapsed = cases::seconds_since(start);

    // The token count plus a sum of token hashes: the same whatever the split into chunks.
    uint64_t sum = 0;
    for (uint64_t h : chunk_hash) sum += h;
    cases::print_checksum(sum);
    std::printf("small_strings %s: %zu bytes of text, %u threads, %.0f ms\n", opt.variant.c_str(),
                text.size(), opt.threads, elapsed * 1e3);
    return 0;
}
