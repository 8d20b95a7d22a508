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

# The cases of benches/overhead.sh (its header says what each measures), in its table's order.
BENCH_CASES=(alloc alloclong mutex compute churn prodcons sizes pell stress rwlock stream rustmutex syscalls omp ompcrit
    tbb forkcpu fork forkexec startup)

# bench_build_case ROOT CASE OUT: builds the program of one of BENCH_CASES as OUT (`startup`: a
# link to `true`); an unknown case returns 2.
bench_build_case() {
    local root="$1" c="$2" out="$3"
    local -A source=([alloc]=alloc_churn [alloclong]=alloc_churn [mutex]=mutex_shared [compute]=compute [churn]=churn_threads
        [prodcons]=producer_consumer [sizes]=random_sizes [pell]=bignum_pell [stress]=stress_threads
        [rwlock]=rwlock_read [syscalls]=syscall_loop [forkcpu]=fork_rate [fork]=fork_rate [forkexec]=fork_rate)
    case "$c" in
        rustmutex)
            cargo build --release --quiet --manifest-path "$root/tests/rust_programs/Cargo.toml" \
                --target-dir "$root/target/rust_programs"
            cp "$root/target/rust_programs/release/std_mutex" "$out" ;;
        omp) cc -O2 -g -fopenmp -o "$out" "$root/tests/omp_programs/small_regions.c" ;;
        ompcrit) cc -O2 -g -fopenmp -o "$out" "$root/tests/omp_programs/short_locks.c" ;;
        tbb) c++ -O2 -g -std=c++17 -o "$out" "$root/tests/tbb_programs/balanced_reduce.cpp" -ltbb ;;
        startup) ln -s "$(type -P true)" "$out" ;;
        stream) g++ -std=c++17 -O2 -g -pthread -I "$root/demos" -o "$out" "$root/demos/stream_parse.cpp" ;;
        *)
            if [ -z "${source[$c]:-}" ]; then
                echo "unknown case: $c" >&2
                return 2
            fi
            cc -O2 -g -pthread -o "$out" "$root/benches/programs/${source[$c]}.c" ;;
    esac
}
