// Parses records with std::istringstream and operator>>, the way a text loader does: each
// extraction of a long word into a std::string allocates inside the library. 800,000 records
// (about 0.3 s): enough CPU samples (at the kernel's 4 ms tick) that the allocator's sampled share
// clears the finding's 3% gate in every run, not in most (200,000 gave about 20 samples).
#include <cstdio>
#include <sstream>
#include <string>

static long __attribute__((noinline)) parse_records(const std::string &text, int n) {
    long total = 0;
    for (int i = 0; i < n; i++) {
        std::istringstream in(text);
        std::string name, kind;
        int value = 0;
        in >> name >> kind >> value;
        total += value + (long)name.size() + (long)kind.size();
    }
    return total;
}

int main() {
    const std::string record = "entity_name_longer_than_sso_buffer component_kind_also_long 42";
    std::printf("%ld\n", parse_records(record, 800000));
    return 0;
}
