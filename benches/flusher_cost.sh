#!/usr/bin/env bash
# What the flusher thread costs a program whose threads are not running: benches/programs/
# idle_pool.c's N threads sleep for S seconds under `stallscope run` (default options: wall samples
# at 100 Hz), and the flusher's own CPU time is read from its /proc/PID/task/TID/schedstat near the
# end of the run. Prints, per pool size, the flusher's CPU time per second of the run (the share of
# one CPU it takes from the machine) and per look at one thread. With --lib PATH, the same for
# another build of the interposer (STALLSCOPE_PRELOAD_LIB), in the same rounds. With --busy the
# threads compute instead (the flusher's looks at threads that run throughout: it takes its CPU
# from them).
#
# Usage: benches/flusher_cost.sh [--threads "1 16 64"] [--seconds S] [--rounds N] [--lib PATH] [--busy]
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="1 16 64"
seconds=3
rounds=3
lib=""
mode=sleep
while [ $# -gt 0 ]; do
    case "$1" in
        --threads) sizes="$2"; shift ;;
        --seconds) seconds="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        --lib) lib="$(realpath "$2")"; shift ;;
        --busy) mode=busy ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
cd "$root"
echo "building stallscope (cargo build --release)..." >&2
cargo build --release --quiet
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-flusher.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/idle_pool" benches/programs/idle_pool.c

# flusher_ns LIB N: the flusher's CPU time (ns) over a run of N threads (sleeping, or busy), read at
# 90% of it.
flusher_ns() {
    local use="$1" n="$2" pid="" ns=""
    rm -f "$work/p.prof"
    if [ -n "$use" ]; then
        STALLSCOPE_PRELOAD_LIB="$use" "$stallscope" run -q -o "$work/p.prof" -- "$work/idle_pool" "$n" "$seconds" "$mode" &
    else
        "$stallscope" run -q -o "$work/p.prof" -- "$work/idle_pool" "$n" "$seconds" "$mode" &
    fi
    local sup=$!
    sleep "$(awk -v s="$seconds" 'BEGIN { print s * 0.9 }')"
    pid=$(pgrep -P "$sup" -x idle_pool | head -1 || true)
    for task in /proc/"$pid"/task/*; do
        [ "$(cat "$task/comm" 2>/dev/null)" = stallscope ] && ns=$(awk '{ print $1 }' "$task/schedstat")
    done
    wait "$sup"
    echo "${ns:-0}"
}

echo
what=sleeping
[ "$mode" = busy ] && what=computing
echo "The flusher's CPU time with N $what threads, $rounds rounds of ${seconds} s each (median, min-max):"
echo
echo "| build | threads | flusher CPU per second of run | per look at one thread |"
echo "|---|---|---|---|"
for n in $sizes; do
    for build in current ${lib:+other}; do
        vals=""
        for ((r = 1; r <= rounds; r++)); do
            if [ "$build" = current ]; then vals+="$(flusher_ns "" "$n") "; else vals+="$(flusher_ns "$lib" "$n") "; fi
        done
        # The program's threads and main, looked at 100 times a second for 90% of the run.
        echo "$vals" | tr ' ' '\n' | grep . | sort -n | awk -v n="$n" -v s="$seconds" -v b="$build" '
            { v[NR] = $1 } END {
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                t = s * 0.9
                printf "| %s | %d | %.1f ms/s (%.1f-%.1f) | %.1f µs |\n", b, n, m / 1e6 / t, v[1] / 1e6 / t, v[NR] / 1e6 / t, m / 1e3 / (t * 100 * (n + 1))
            }'
    done
done
