#!/usr/bin/env bash
# How well the sampled timing estimates the time spent in malloc and free, against every call
# timed (`--timing exact`), on benches/programs/consolidate.c:
#   own    rounds of 2 million frees by the main thread, then 2 KiB requests, the first of which
#          consolidates the fast bins (milliseconds in one call)
#   other  the same, the frees done by another thread (the main thread's own frees do not show
#          that the fast bins are full)
#   mixed  no slow call: blocks of 16 B to 16 KiB replaced at random
# Prints, per mode and build, the estimated malloc and free times over the runs (median and
# min-max) and the median as a share of the exact timing's. With --baseline-lib, the same with
# another build of the interposer (an A/B of two stratum rules).
#
# Usage: benches/strata_accuracy.sh [--runs N] [--lib PATH] [--baseline-lib PATH] [MODE...]
# Needs jq. This is a measurement, not a test.
set -euo pipefail

runs=9
lib=""
baseline_lib=""
modes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift ;;
        --lib) lib="$2"; shift ;;
        --baseline-lib) baseline_lib="$2"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        -*) echo "unknown option: $1" >&2; exit 2 ;;
        *) modes+=("$1") ;;
    esac
    shift
done
[ ${#modes[@]} -gt 0 ] || modes=(own other mixed)
command -v jq >/dev/null || { echo "jq not found (Debian package jq)" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
(cd "$root" && cargo build --release --quiet)
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
[ -z "$lib" ] || lib="$(abs "$lib")"
[ -z "$baseline_lib" ] || baseline_lib="$(abs "$baseline_lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-strata.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/consolidate" "$root/benches/programs/consolidate.c"

# times LIB TIMING MODE: prints "malloc_ns free_ns" of one run.
times() {
    local prof="$work/run.prof"
    rm -f "$prof"
    STALLSCOPE_PRELOAD_LIB="$1" "$stallscope" run -q --timing "$2" -o "$prof" -- "$work/consolidate" "$3" >/dev/null
    "$stallscope" report --json "$prof" | jq -r '"\(.alloc.functions.malloc.time_ns) \(.alloc.functions.free.time_ns)"'
}

# summary VALUES EXACT_MEDIAN: "median (min-max) ms, share of exact"
summary() {
    echo "$1" | tr ' ' '\n' | grep . | sort -g | awk -v ex="$2" '{ v[NR] = $1 } END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
        printf "%.1f ms (%.1f-%.1f) = %.2f", m / 1e6, v[1] / 1e6, v[NR] / 1e6, (ex > 0 ? m / ex : 0) }'
}

builds=(sampled)
[ -n "$baseline_lib" ] && builds+=(baseline)
echo "$runs runs per mode and build; estimated time (median, min-max over the runs) and its share of"
echo "the exact timing's median. Load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
# With every call timed nothing is capped, so a call during which the thread was descheduled counts
# the whole time it waited for a CPU; a sampled call is capped at 50 us. On a machine busier than
# its CPUs the exact figure is mostly waiting, and the comparison says nothing about the estimator.
if awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v n="$(nproc)" 'BEGIN { exit !(l > n * 0.75) }'; then
    echo "WARNING: load average above 3/4 of the $(nproc) CPUs: calls descheduled while every call is timed"
    echo "inflate the exact figures; run this on a quiet machine."
fi
echo
echo "| mode | build | malloc | free |"
echo "|---|---|---|---|"
for mode in "${modes[@]}"; do
    declare -A m=() f=()
    for ((r = 0; r < runs; r++)); do
        read -r a b < <(times "$lib" exact "$mode"); m[exact]+="$a "; f[exact]+="$b "
        for build in "${builds[@]}"; do
            l="$lib"; [ "$build" = baseline ] && l="$baseline_lib"
            read -r a b < <(times "$l" sampled "$mode"); m[$build]+="$a "; f[$build]+="$b "
        done
    done
    me=$(echo "${m[exact]}" | bench_median); fe=$(echo "${f[exact]}" | bench_median)
    echo "| $mode | every call timed | $(summary "${m[exact]}" "$me") | $(summary "${f[exact]}" "$fe") |"
    for build in "${builds[@]}"; do
        echo "| $mode | $build | $(summary "${m[$build]}" "$me") | $(summary "${f[$build]}" "$fe") |"
    done
done
