// Case study: parallel stream parsing.
//
// A generated text of about 15 MB describing 110,000 entities (one per line: a kind, an id, a
// name, a position, a velocity, flags and a list of tags) is parsed into objects by one thread per
// core. The original hunt (Windows): 3 s sequential became 17 s in parallel because every `>>`
// copied the stream's shared locale under a lock. With libstdc++ on Linux the locale's reference
// count is an atomic, not a lock; what does cost is the stream itself.
//
//   slow   one std::istringstream per line, fields read with operator>>
//   fixed  the line split by hand and numbers read with std::from_chars (no allocation, no locale)
//
// Every variant prints the same checksum of the parsed objects.
#include "case_common.h"

#include <charconv>
#include <cmath>
#include <sstream>
#include <string_view>
#include <vector>

struct Entity {
    std::string kind;
    long id = 0;
    std::string name;
    double pos[3] = {0, 0, 0};
    double vel[3] = {0, 0, 0};
    unsigned flags = 0;
    std::vector<int> tags;
};

static std::string make_text(size_t entities) {
    static const char *const kinds[] = {"unit", "building", "projectile", "decoration", "trigger"};
    std::string s;
    s.reserve(entities * 140);
    uint32_t x = 1234567u;
    auto rnd = [&] { return x ^= x << 13, x ^= x >> 17, x ^= x << 5, x; };
    char line[256];
    for (size_t i = 0; i < entities; i++) {
        auto coord = [&] { return double(int32_t(rnd() % 2000000) - 1000000) / 1024.0; };
        int n = std::snprintf(line, sizeof line, "%s %zu entity_%08x %.6f %.6f %.6f %.4f %.4f %.4f %u",
                              kinds[rnd() % 5], 100000 + i, rnd(), coord(), coord(), coord(),
                              coord() / 64, coord() / 64, coord() / 64, rnd() % 65536);
        s.append(line, size_t(n));
        for (uint32_t t = 0, tags = 6 + rnd() % 8; t < tags; t++) {
            n = std::snprintf(line, sizeof line, " %u", rnd() % 1000);
            s.append(line, size_t(n));
        }
        s += '\n';
    }
    return s;
}

static Entity parse_stream(const std::string &line) {
    std::istringstream in(line);
    Entity e;
    in >> e.kind >> e.id >> e.name;
    for (double &p : e.pos) in >> p;
    for (double &v : e.vel) in >> v;
    in >> e.flags;
    for (int tag; in >> tag;) e.tags.push_back(tag);
    return e;
}

static std::string_view next_field(std::string_view &rest) {
    size_t start = rest.find_first_not_of(' ');
    if (start == rest.npos) return rest = {}, std::string_view{};
    rest.remove_prefix(start);
    size_t end = std::min(rest.find(' '), rest.size());
    std::string_view field = rest.substr(0, end);
    rest.remove_prefix(end);
    return field;
}

template <class T> static void read_number(std::string_view &rest, T &out) {
    std::string_view f = next_field(rest);
    std::from_chars(f.data(), f.data() + f.size(), out);
}

static Entity parse_from_chars(std::string_view rest) {
    Entity e;
    e.kind = next_field(rest);
    read_number(rest, e.id);
    e.name = next_field(rest);
    for (double &p : e.pos) read_number(rest, p);
    for (double &v : e.vel) read_number(rest, v);
    read_number(rest, e.flags);
    for (std::string_view f; !(f = next_field(rest)).empty();) {
        int tag = 0;
        std::from_chars(f.data(), f.data() + f.size(), tag);
        e.tags.push_back(tag);
    }
    return e;
}

static uint64_t checksum(const std::vector<Entity> &entities) {
    uint64_t h = entities.size();
    for (const Entity &e : entities) {
        h = cases::hash_bytes(e.kind.data(), e.kind.size(), h) ^ uint64_t(e.id);
        h = cases::hash_bytes(e.name.data(), e.name.size(), h);
        for (double p : e.pos) h = h * 31 + uint64_t(std::llround(p * 1e6));
        for (double v : e.vel) h = h * 31 + uint64_t(std::llround(v * 1e4));
        h = h * 31 + e.flags;
        for (int t : e.tags) h = h * 31 + uint64_t(t);
    }
    return h;
}

int main(int argc, char **argv) {
    static const char *const variants[] = {"slow", "fixed", nullptr};
    cases::Options opt = cases::parse(argc, argv, variants, "");
    const size_t count = opt.quick ? 12000 : 110000;
    const std::string text = make_text(count);

    std::vector<std::string_view> lines;
    lines.reserve(count);
    for (size_t start = 0, end; start < text.size(); start = end + 1) {
        end = text.find('\n', start);
        lines.emplace_back(text.data() + start, end - start);
    }

    auto start = std::chrono::steady_clock::now();
    std::vector<Entity> entities(lines.size());
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < opt.threads; t++) {
        threads.emplace_back([&, t] {
            size_t b = lines.size() * t / opt.threads, e = lines.size() * (t + 1) / opt.threads;
            for (size_t i = b; i < e; i++)
                entities[i] = opt.variant == "slow" ? parse_stream(std::string(lines[i]))
                                                    : parse_from_chars(lines[i]);
        });
    }
    for (auto &t : threads) t.join();
    double elapsed = cases::seconds_since(start);

    cases::print_checksum(checksum(entities));
    std::printf("stream_parse %s: %zu entities, %.1f MB, %u threads, %.0f ms\n", opt.variant.c_str(),
                entities.size(), double(text.size()) / 1e6, opt.threads, elapsed * 1e3);
    return 0;
}
