#!/usr/bin/env bash
# What fork costs under `stallscope run`: a program forks children that only call _exit, for about
# a second, and reports its forks per second (benches/programs/fork_rate.c). Each round runs it
# unprofiled, under `stallscope run` (defaults), under `stallscope run --no-sampling`, and with
# STALLSCOPE_KEEP_SINGLE=0 (the flusher makes the program multi-threaded in glibc's eyes, so fork
# takes glibc's multi-threaded path, as before preload/single.c), interleaved (the starting mode rotates per round); the table gives the median rate and its
# ratio to the unprofiled one, with their spread. Every child gets its own profile: one that only
# exits hands its bytes to the supervisor in one write (the pack, preload/writer.c), which makes
# its file after the run; the rates include that write, not the file's creation.
#
# Usage: benches/fork_rate.sh [--rounds N] [--seconds S] [--exec] [--against PATH]
#   --exec: each child execs /bin/true instead of calling _exit (the exec'd program is profiled).
#   --against PATH: also run another stallscope executable (defaults) in the same rounds, e.g. an
#   older build, for a before/after comparison side by side.
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail

rounds=5
seconds=1
against=""
exec_arg=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --seconds) seconds="$2"; shift ;;
        --against) against="$2"; shift ;;
        --exec) exec_arg=exec ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
echo "building stallscope (cargo build --release)..." >&2
cargo build --release --quiet
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-fork.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/fork_rate" "$root/benches/programs/fork_rate.c"
modes=(plain sampled nosampling multithreaded)
[ -n "$against" ] && modes+=(against)

# run_one MODE ROUND: prints forks per second.
run_one() {
    local mode="$1" round="$2" dir="$work/$1.$2"
    mkdir -p "$dir"
    case "$mode" in
        plain) (cd "$dir" && "$work/fork_rate" "$seconds" $exec_arg) ;;
        sampled) (cd "$dir" && "$stallscope" run -q -- "$work/fork_rate" "$seconds" $exec_arg) ;;
        nosampling) (cd "$dir" && "$stallscope" run -q --no-sampling -- "$work/fork_rate" "$seconds" $exec_arg) ;;
        multithreaded) (cd "$dir" && STALLSCOPE_KEEP_SINGLE=0 "$stallscope" run -q -- "$work/fork_rate" "$seconds" $exec_arg) ;;
        against) (cd "$dir" && "$against" run -q -- "$work/fork_rate" "$seconds" $exec_arg) ;;
    esac
    rm -rf "$dir"
}

declare -A rates
for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds..." >&2
    n=${#modes[@]}
    for ((k = 0; k < n; k++)); do
        mode=${modes[$(((k + r - 1) % n))]}
        rates[$mode]+="$(run_one "$mode" "$r") "
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
range() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%d-%d", lo, hi }'; }
us() { awk -v r="$1" 'BEGIN { printf "%.0f µs", 1e6 / r }'; }
# The per-round ratios (each round's plain rate over that round's profiled rate: a slowdown).
ratios() {
    local -a p=(${rates[plain]}) m=(${rates[$1]})
    for ((i = 0; i < ${#p[@]}; i++)); do awk -v a="${p[$i]}" -v b="${m[$i]}" 'BEGIN { printf "%.3f\n", a / b }'; done |
        sort -n | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2fx (%.2f-%.2f)", m, v[1], v[NR] }'
}

plain=$(echo "${rates[plain]}" | median)
echo
echo "Median forks per second of $rounds interleaved rounds (fork + ${exec_arg:+exec /bin/true + }_exit + waitpid), min-max;"
echo "slowdown: median of the per-round ratios (unprofiled rate / profiled rate), min-max."
echo
echo "| mode | forks/s | per fork | slowdown |"
echo "|---|---|---|---|"
echo "| unprofiled | $plain ($(echo "${rates[plain]}" | range)) | $(us "$plain") | 1.00x |"
for mode in sampled nosampling multithreaded against; do
    [ -z "${rates[$mode]:-}" ] && continue
    rate=$(echo "${rates[$mode]}" | median)
    case "$mode" in
        sampled) name="stallscope run" ;;
        nosampling) name="stallscope run --no-sampling" ;;
        multithreaded) name="STALLSCOPE_KEEP_SINGLE=0 stallscope run" ;;
        against) name="$against run" ;;
    esac
    echo "| $name | $rate ($(echo "${rates[$mode]}" | range)) | $(us "$rate") | $(ratios "$mode") |"
done
