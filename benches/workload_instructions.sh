#!/usr/bin/env bash
# Instructions the interposer adds to the workloads of benches/overhead.sh, counted by callgrind:
# a figure that a loaded machine does not disturb, unlike wall time (valgrind runs the threads one
# at a time, so it says nothing about contention: the lock cases' wall-time ratios also depend on
# how the hooks shift the hand-over of a lock between cores). Each workload runs once without the
# interposer and once with it (LD_PRELOAD, at its defaults: counts, the 1-in-32 timed sample,
# allocation and lock stacks, the always-timed stratum; thread-state sampling off, its signals
# depending on time, which valgrind stretches), and the script prints the instructions per unit of
# work of each and their ratio:
#   fixed-work cases   instructions of the whole run (start-up and the profile's writing included)
#   throughput cases   instructions per operation the program reports (it runs for a fixed time)
#
# Usage: benches/workload_instructions.sh [--lib PATH] [CASE...]
#   CASE   churn prodcons sizes pell stress rwlock stream (default: all; the alloc and mutex
#          cases are loops of one call pair: benches/hook_cost.sh counts those per pair)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
lib=""
cases=()
while [ $# -gt 0 ]; do
    case "$1" in
        --lib) lib="$2"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "unknown option: $1" >&2; exit 2 ;;
        *) cases+=("$1") ;;
    esac
    shift
done
[ ${#cases[@]} -gt 0 ] || cases=(churn prodcons sizes pell stress rwlock stream)
command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }

# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
lib="$(bench_interposer "$root" "$lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-wlinstr.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Smaller than overhead.sh's runs (valgrind is some 50 times slower), the same shapes.
declare -A source=([churn]=churn_threads
    [prodcons]=producer_consumer [sizes]=random_sizes [pell]=bignum_pell [stress]=stress_threads
    [rwlock]=rwlock_read)
declare -A args=([churn]="2 3" [prodcons]="1 1 3" [sizes]="2 3" [pell]="10" [stress]="2 10"
    [rwlock]="2000000" [stream]="slow --quick --threads 2")
declare -A kind=([churn]=throughput [prodcons]=throughput [sizes]=throughput)

# instructions MODE CASE: prints "instructions operations" of one run under callgrind.
instructions() {
    local mode="$1" c="$2" out="$work/$2.$1"
    # shellcheck disable=SC2086
    (cd "$work" && env ${mode:+LD_PRELOAD="$lib"} STALLSCOPE_DIR="$work" STALLSCOPE_SAMPLE_HZ=0 \
        STALLSCOPE_WALL_HZ=0 valgrind --tool=callgrind --callgrind-out-file="$out.cg" \
        "./$c" ${args[$c]} >"$out.stdout" 2>"$out.log")
    local ir ops
    ir=$(callgrind_annotate "$out.cg" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
    ops=$(awk '/ operations in / { print $2 }' "$out.stdout")
    echo "$ir ${ops:-1}"
}

echo "interposer: $lib"
printf '%-9s %-10s %16s %16s %8s\n' case per unprofiled stallscope ratio
for c in "${cases[@]}"; do
    if [ "$c" = stream ]; then
        g++ -std=c++17 -O2 -g -pthread -I "$root/demos" -o "$work/$c" "$root/demos/stream_parse.cpp"
    elif [ -n "${source[$c]:-}" ]; then
        cc -O2 -g -pthread -o "$work/$c" "$root/benches/programs/${source[$c]}.c"
    else
        echo "unknown case: $c" >&2; exit 2
    fi
    read -r plain_ir plain_ops < <(instructions "" "$c")
    read -r with_ir with_ops < <(instructions with "$c")
    if [ "${kind[$c]:-}" = throughput ]; then
        awk -v c="$c" -v a="$plain_ir" -v b="$plain_ops" -v x="$with_ir" -v y="$with_ops" \
            'BEGIN { p = a / b; w = x / y; printf "%-9s %-10s %16.1f %16.1f %7.3fx\n", c, "operation", p, w, w / p }'
    else
        awk -v c="$c" -v a="$plain_ir" -v x="$with_ir" \
            'BEGIN { printf "%-9s %-10s %16d %16d %7.3fx\n", c, "run", a, x, x / a }'
    fi
done
