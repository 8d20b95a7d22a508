#!/usr/bin/env bash
# Overhead of allocation stacks on two allocation-heavy cases: `alloc`, the one of
# benches/overhead.sh (benches/programs/alloc_churn.c, shallow stacks), and `deep`
# (benches/unwind_deep.cc, ~32-frame stacks through libstdc++). Each runs unprofiled, under
# `stallscope run --no-stacks`, under `stallscope run` (stacks at the default rate, libgcc's
# unwinder) and, when libunwind.so.8 is installed, under `stallscope run --unwinder libunwind`;
# for the file size, heaptrack runs the alloc case once.
# Usage: benches/unwind_overhead.sh [ROUNDS]   (default 11; rounds are interleaved)
set -euo pipefail
rounds="${1:-11}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
cargo build --release --quiet
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-unwind.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/alloc" benches/programs/alloc_churn.c
g++ -O2 -o "$work/deep" benches/unwind_deep.cc
modes=(plain nostacks stacks)
if [ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ]; then modes+=(libunwind); fi
declare -A times
for ((r = 1; r <= rounds; r++)); do
    for c in alloc deep; do
        n=${#modes[@]}
        for ((k = 0; k < n; k++)); do
            m=${modes[$(((k + r) % n))]}
            s=$(date +%s%N)
            case $m in
                plain) "$work/$c" >/dev/null ;;
                nostacks) "$stallscope" run -q --no-stacks -o "$work/$c.$m.$r.prof" -- "$work/$c" >/dev/null ;;
                stacks) "$stallscope" run -q -o "$work/$c.$m.$r.prof" -- "$work/$c" >/dev/null ;;
                libunwind) "$stallscope" run -q --unwinder libunwind -o "$work/$c.$m.$r.prof" -- "$work/$c" >/dev/null ;;
            esac
            e=$(date +%s%N)
            times[$c.$m]+="$((e - s)) "
        done
    done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median of $rounds interleaved rounds; ratios to the unprofiled run"
for c in alloc deep; do
    plain=$(echo "${times[$c.plain]}" | median)
    for m in "${modes[@]}"; do
        t=$(echo "${times[$c.$m]}" | median)
        awk -v c="$c" -v m="$m" -v t="$t" -v p="$plain" 'BEGIN { printf "%-6s %-9s %8.1f ms  %.2fx\n", c, m, t / 1e6, t / p }'
    done
done
size=$(stat -c %s "$work/alloc.stacks.1.prof")
echo "alloc profile with stacks: $size bytes"
if command -v heaptrack >/dev/null; then
    heaptrack -o "$work/ht" "$work/alloc" >/dev/null 2>&1 || true
    hsize=$(stat -c %s "$work"/ht*.zst 2>/dev/null || stat -c %s "$work"/ht*.gz 2>/dev/null || echo 0)
    echo "heaptrack's file: $hsize bytes (compressed); stallscope's is $(awk -v a="$size" -v b="$hsize" 'BEGIN { if (b > 0) printf "%.3f%%", 100 * a / b; else print "?" }') of it"
fi
