// Parses records with std::istringstream and operator>>, the way a text loader does: each
// extraction of a long word into a std::string allocates inside the library.
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
    std::printf("%ld\n", parse_records(record, 200000));
    return 0;
}
