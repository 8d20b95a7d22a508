# Sourced by the bench scripts: what more than one of them needs.

# bench_interposer ROOT [LIB]: the absolute path of LIB, or (none given) of the interposer that
# `cargo build --release` embeds, built first (CARGO_TARGET_DIR is honoured).
bench_interposer() {
    local root="$1" lib="${2:-}"
    if [ -z "$lib" ]; then
        (cd "$root" && cargo build --release --quiet)
        local target="${CARGO_TARGET_DIR:-$root/target}"
        lib="$(ls -t "$target"/release/build/stallscope-*/out/libstallscope.so | head -1)"
    fi
    echo "$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")"
}

# bench_median: the median of the numbers on stdin (separated by spaces or newlines).
bench_median() {
    tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
