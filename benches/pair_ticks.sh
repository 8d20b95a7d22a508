#!/usr/bin/env bash
# The time of one hooked call pair (benches/programs/pair_ticks.c: the fastest of 400 batches, in
# TSC ticks), unprofiled and under the interposer (LD_PRELOAD, thread-state sampling off), with
# allocator calls and lock holds timed at the default period (1 in 256) and at others
# (STALLSCOPE_TIMING_PERIOD: both 1 in N) and with uncontended lock calls forwarded to glibc instead of done
# by the hooks (STALLSCOPE_LOCK_STEPS=0), interleaved over rounds; prints the median of each over
# the rounds.
# Wall-time ratios of whole programs move by 30% on a shared machine; the fastest batch does not.
#
# Usage: benches/pair_ticks.sh [--lib PATH] [--rounds N] [MODE...]   (modes: rwlock mutex malloc)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
lib=""
rounds=5
modes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --lib) lib="$2"; shift ;;
        --rounds) rounds="$2"; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        -*) echo "unknown option: $1" >&2; exit 2 ;;
        *) modes+=("$1") ;;
    esac
    shift
done
[ ${#modes[@]} -gt 0 ] || modes=(rwlock mutex malloc)
# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
lib="$(bench_interposer "$root" "$lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-pairticks.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/pair_ticks" "$root/benches/programs/pair_ticks.c"

settings=("unprofiled:" "default (1 in 256):STALLSCOPE_TIMING_PERIOD=256"
    "1 in 32:STALLSCOPE_TIMING_PERIOD=32" "no timing (period 2^31):STALLSCOPE_TIMING_PERIOD=2147483647"
    "steps forwarded to glibc:STALLSCOPE_TIMING_PERIOD=256 STALLSCOPE_LOCK_STEPS=0")
echo "Ticks per pair, median over $rounds rounds of the fastest batch. Load average: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
header="| pair"; sep="|---"
for s in "${settings[@]}"; do header+=" | ${s%%:*}"; sep+="|---"; done
echo "$header |"; echo "$sep|"
for mode in "${modes[@]}"; do
    declare -A v=()
    for ((r = 0; r < rounds; r++)); do
        for s in "${settings[@]}"; do
            name="${s%%:*}" envs="${s#*:}"
            if [ -z "$envs" ]; then
                out="$("$work/pair_ticks" "$mode")"
            else
                # shellcheck disable=SC2086
                out="$(env $envs STALLSCOPE_DIR="$work" STALLSCOPE_SAMPLE_HZ=0 STALLSCOPE_WALL_HZ=0 LD_PRELOAD="$lib" "$work/pair_ticks" "$mode")"
            fi
            v[$name]+="$(echo "$out" | awk '{ print $2 }') "
        done
    done
    row="| $mode"
    for s in "${settings[@]}"; do row+=" | $(echo "${v[${s%%:*}]}" | bench_median)"; done
    echo "$row |"
    unset v
    rm -f "$work"/*.prof
done
