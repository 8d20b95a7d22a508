#!/usr/bin/env bash
# How much of the allocator hooks' cost is the floor of any hook: allocation-bound programs
# (benches/programs alloc_churn and bignum_pell) unprofiled, under LD_PRELOAD libraries that do
# less than the interposer (benches/programs/hook_floor.c: a pass-through, one countdown, the
# interposer's exact counts, those kept with more increments, and those with their record in a
# mapping of its own rather than static TLS) and under the interposer itself
# (LD_PRELOAD, thread-state sampling off and on), interleaved (the starting mode rotates per
# round). Prints each mode's median CPU time (perf stat's task-clock, the program's threads on a
# CPU: steadier than wall time on a shared machine) over the rounds and its ratio to the unprofiled median, with the per-round ratios'
# min-max.
#
# Usage: benches/hook_floor.sh [--rounds N] [--lib PATH]
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail
command -v perf >/dev/null || { echo "perf not found (Debian package linux-perf)" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds=15
lib=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --lib) lib="$2"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
lib="$(bench_interposer "$root" "$lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-floor.XXXXXX")"
trap 'rm -rf "$work"' EXIT
for p in alloc_churn bignum_pell; do cc -O2 -pthread -o "$work/$p" "$root/benches/programs/$p.c"; done
for f in 0 1 2 3 4; do
    cc -O2 -shared -fPIC -DFLOOR=$f -o "$work/floor$f.so" "$root/benches/programs/hook_floor.c" -ldl
done
mkdir -p "$work/prof"

modes=(plain floor0 floor1 floor2 floor3 floor4 interposer nosampling)
declare -A title=([plain]=unprofiled [floor0]="pass-through" [floor1]="one countdown"
    [floor2]="exact counts" [floor3]="counts, more increments" [floor4]="counts, record in a mapping" [interposer]="interposer"
    [nosampling]="interposer, no sampling")

run_one() { # PROGRAM MODE: prints the CPU time in ms
    local env=()
    case "$2" in
        plain) ;;
        floor*) env=(LD_PRELOAD="$work/$2.so") ;;
        interposer) env=(LD_PRELOAD="$lib" STALLSCOPE_DIR="$work/prof") ;;
        nosampling) env=(LD_PRELOAD="$lib" STALLSCOPE_DIR="$work/prof" STALLSCOPE_SAMPLE_HZ=0 STALLSCOPE_WALL_HZ=0) ;;
    esac
    rm -f "$work/cpu"
    perf stat -x, -e task-clock -o "$work/cpu" env "${env[@]}" "$work/$1" >/dev/null
    rm -f "$work/prof"/*
    awk -F, '$3 == "task-clock" { printf "%.2f\n", $1 }' "$work/cpu"
}

declare -A values
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 0; r < rounds; r++)); do
    for p in alloc_churn bignum_pell; do
        n=${#modes[@]}
        for ((k = 0; k < n; k++)); do
            m=${modes[$(((k + r) % n))]}
            values[$p.$m.$r]=$(run_one "$p" "$m")
        done
    done
done
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "$rounds interleaved rounds, CPU time (task-clock); load $(cut -d' ' -f1-3 /proc/loadavg) at the end."
echo
echo "| mode | alloc_churn | ratio (per-round min-max) | bignum_pell | ratio (per-round min-max) |"
echo "|---|---|---|---|---|"
for m in "${modes[@]}"; do
    row="| ${title[$m]}"
    for p in alloc_churn bignum_pell; do
        med=$(for ((r = 0; r < rounds; r++)); do echo "${values[$p.$m.$r]}"; done | median)
        base=$(for ((r = 0; r < rounds; r++)); do echo "${values[$p.plain.$r]}"; done | median)
        range=$(for ((r = 0; r < rounds; r++)); do
            awk -v a="${values[$p.$m.$r]}" -v b="${values[$p.plain.$r]}" 'BEGIN { if (b > 0) printf "%.3f\n", a / b }'
        done | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')
        row+=" | $med ms | $(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.3fx", a / b }') ($range)"
    done
    echo "$row |"
done
