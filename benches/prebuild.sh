#!/usr/bin/env bash
# Builds stallscope and the benchmarks' programs into one folder, for a machine that has no cargo
# or compilers (overhead.sh and faithfulness.sh take it with --prebuilt DIR): DIR/stallscope,
# DIR/libstallscope.so, each overhead case's program as DIR/CASE, the faithfulness programs
# (-no-pie) and pass-through library, the cause programs as DIR/causes/NAME, and the OpenMP and
# TBB runtimes the programs link against in DIR/lib (overhead.sh puts it first on LD_LIBRARY_PATH).
#
# Usage: benches/prebuild.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1/lib" "$1/causes"
out="$(cd "$1" && pwd)"
cd "$root"
# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
cp "$(bench_interposer "$root")" "$out/libstallscope.so"
cp "${CARGO_TARGET_DIR:-$root/target}/release/stallscope" "$out/stallscope"
for c in "${BENCH_CASES[@]}"; do
    [ "$c" = startup ] || bench_build_case "$root" "$c" "$out/$c"
done
for p in mutex_handoffs cond_handoffs rwlock_handoffs; do
    cc -O2 -g -pthread -no-pie -o "$out/$p" "benches/programs/$p.c"
done
cc -O2 -g -fopenmp -no-pie -o "$out/omp_handoffs" benches/programs/omp_handoffs.c
cc -O2 -shared -fPIC -o "$out/lock_passthrough.so" benches/programs/lock_passthrough.c -ldl
for f in tests/cause_programs/*.c tests/cause_programs/*.cpp; do
    name="$(basename "${f%.*}")"
    case "$f" in
        *.c) cc -O2 -g -pthread -I include -o "$out/causes/$name" "$f" -lm ;;
        *) g++ -std=c++17 -O2 -g -pthread -I include -o "$out/causes/$name" "$f" ;;
    esac
done
# Programs of the runtimes, for findings at many threads (benches/device_check.sh): OpenMP (threads
# from OMP_NUM_THREADS), oneTBB and Rust (threads as their first argument).
mkdir -p "$out/runtimes"
for f in critical_section imbalanced_static balanced_dynamic small_regions; do
    cc -O2 -g -fopenmp -o "$out/runtimes/omp_$f" "tests/omp_programs/$f.c"
done
for f in spin_mutex itt_mutexes balanced_reduce; do
    c++ -O2 -g -std=c++17 -o "$out/runtimes/tbb_$f" "tests/tbb_programs/$f.cpp" -ltbb
done
for f in std_mutex pl_mutex rayon_clean; do
    cp "target/rust_programs/release/$f" "$out/runtimes/rust_$f"
done
for l in libgomp.so.1 libtbb.so.12; do
    cp -L "$(ldconfig -p | awk -v l="$l" '$1 == l { print $NF; exit }')" "$out/lib/$l"
done
echo "built into $out" >&2
