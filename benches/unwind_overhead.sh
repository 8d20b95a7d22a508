#!/usr/bin/env bash
# Overhead of allocation stacks on the allocation-heavy case of benches/overhead.sh
# (benches/programs/alloc_churn.c): the unprofiled program, `stallscope run --no-stacks`,
# `stallscope run` (stacks at the default rate) and, for the file size, heaptrack.
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
modes=(plain nostacks stacks)
declare -A times
for ((r = 1; r <= rounds; r++)); do
    n=${#modes[@]}
    for ((k = 0; k < n; k++)); do
        m=${modes[$(((k + r) % n))]}
        s=$(date +%s%N)
        case $m in
            plain) "$work/alloc" >/dev/null ;;
            nostacks) "$stallscope" run -q --no-stacks -o "$work/$m.$r.prof" -- "$work/alloc" >/dev/null ;;
            stacks) "$stallscope" run -q -o "$work/$m.$r.prof" -- "$work/alloc" >/dev/null ;;
        esac
        e=$(date +%s%N)
        times[$m]+="$((e - s)) "
    done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
plain=$(echo "${times[plain]}" | median)
echo "median of $rounds rounds (ms): unprofiled, --no-stacks, stacks (default rate); ratios"
for m in "${modes[@]}"; do
    t=$(echo "${times[$m]}" | median)
    awk -v m="$m" -v t="$t" -v p="$plain" 'BEGIN { printf "%-9s %8.1f ms  %.2fx\n", m, t / 1e6, t / p }'
done
size=$(stat -c %s "$work/stacks.1.prof")
echo "profile with stacks: $size bytes"
if command -v heaptrack >/dev/null; then
    heaptrack -o "$work/ht" "$work/alloc" >/dev/null 2>&1 || true
    hsize=$(stat -c %s "$work"/ht*.zst 2>/dev/null || stat -c %s "$work"/ht*.gz 2>/dev/null || echo 0)
    echo "heaptrack's file: $hsize bytes (compressed); stallscope's is $(awk -v a="$size" -v b="$hsize" 'BEGIN { if (b > 0) printf "%.3f%%", 100 * a / b; else print "?" }') of it"
fi
