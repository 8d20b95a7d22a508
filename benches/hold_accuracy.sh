#!/usr/bin/env bash
# How well the sampled hold times estimate the time a lock was held, at the default period (one
# acquisition in 256 timed, the period allocator calls share) against one in 32
# (`--timing-period 32`) and every hold timed (`--timing exact`), on
# benches/programs/lock_holds.c (19 holds in 20 of about 50 ns, one of about 5 us). Each run's
# estimate is divided by the held time the program measured itself in that run; prints, per
# number of holds and setting, the median of that ratio over the runs and its min-max.
#
# Usage: benches/hold_accuracy.sh [--runs N] [HOLDS...]      (default: 9 runs; 2000 20000 200000)
# Needs jq. This is a measurement, not a test.
set -euo pipefail

runs=9
counts=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "unknown option: $1" >&2; exit 2 ;;
        *) counts+=("$1") ;;
    esac
    shift
done
[ ${#counts[@]} -gt 0 ] || counts=(2000 20000 200000)
command -v jq >/dev/null || { echo "jq not found (Debian package jq)" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$root" && cargo build --release --quiet)
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-holds.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/lock_holds" "$root/benches/programs/lock_holds.c"

# ratio HOLDS OPTIONS...: the estimated hold time over the program's own measure, one run.
ratio() {
    local n="$1" prof="$work/run.prof" out
    shift
    rm -f "$prof"
    out="$("$stallscope" run -q "$@" -o "$prof" -- "$work/lock_holds" "$n")"
    local measured estimated
    measured="$(echo "$out" | sed -n 's/.*holds, \([0-9]*\) ns held.*/\1/p')"
    estimated="$("$stallscope" report --json "$prof" | jq '[.locks[] | .hold_ns] | max')"
    awk -v e="$estimated" -v m="$measured" 'BEGIN { printf "%.4f", e / m }'
}

summary() {
    tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }'
}

settings=("exact:--timing exact" "1 in 32:--timing-period 32" "1 in 256 (default):--timing sampled")
echo "$runs runs per setting; estimated hold time / the program's own measure: median (min-max)."
echo "Load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "| holds | every hold timed | 1 in 32 timed | 1 in 256 timed (default) |"
echo "|---|---|---|---|"
for n in "${counts[@]}"; do
    declare -A r=()
    for ((i = 0; i < runs; i++)); do
        for s in "${settings[@]}"; do
            # shellcheck disable=SC2086
            r["${s%%:*}"]+="$(ratio "$n" ${s#*:}) "
        done
    done
    row="| $n"
    for s in "${settings[@]}"; do row+=" | $(echo "${r[${s%%:*}]}" | summary)"; done
    echo "$row |"
    unset r
done
