#!/usr/bin/env bash
# Does the profile change what it measures? A program's lock behaviour counted without stallscope
# and under it, by counters that are not stallscope's: two threads take one mutex 5 million times
# (benches/programs/mutex_handoffs.c, mutex_shared.c's loop), and per run
#   handoffs  the program's own count of acquisitions by the thread that did not hold it last
#   waits     the kernel's FUTEX_WAIT_PRIVATE calls on the lock's word (perf, syscalls tracepoint
#             filtered on the word's address: a thread that went to sleep for the lock)
#   wakes     the kernel's FUTEX_WAKE_PRIVATE calls on it (a release that woke, or tried to)
#   contended the profile's contended acquisitions (profiled runs only)
# for the unprofiled program, `stallscope run` (lock steps on, the default), `stallscope run
# --no-sampling` (the lock hooks without the thread-state sampler's signals and /proc reads) and
# `stallscope run` with STALLSCOPE_LOCK_STEPS=0 (the hooks forward to glibc), interleaved (the mode
# that starts rotates per round). The table gives each figure's median over the rounds with its min-max.
# Needs perf and root (or perf_event_paranoid -1 and tracefs access).
#
# Usage: benches/faithfulness.sh [--rounds N] [--cpus LIST] [--rt] [--modes LIST] [--baseline-lib PATH]...
#   --cpus LIST  run every mode under taskset -c LIST
#   --rt         run every mode at real-time priority (chrt -f 10, root): the two threads run
#                together whenever there are two CPUs, whatever else the machine runs. Without
#                it, on a machine busy with other work, whether they overlap at all decides the
#                figures (hand-offs from 10 to 30,000 from run to run at load 6).
#   --baseline-lib PATH  add a mode: `stallscope run` with that interposer (STALLSCOPE_PRELOAD_LIB;
#                an A/B of two builds, interleaved with the others); may be given more than once
#   --modes LIST which modes to run, comma-separated (plain is always run: the ratios need it);
#                default plain,steps,nosampling,forwarded. Besides those four:
#                  cpuonly   `stallscope run --wall-hz 0`: the CPU samples' signals, no /proc reads
#                  wallonly  `stallscope run --sample-hz 0`: the flusher's /proc reads, no signals
#                  again     the unprofiled program again: an A/A control, whose ratios to
#                            `plain` are the run-to-run spread alone
#                  perfrec   the unprofiled program under `perf record -F 1000 -g`: what a
#                            kernel sampling profiler at stallscope's CPU sample rate costs it
#                            (with --rt, perf itself is not real-time, only the program)
#                (--baseline-lib adds its modes, whatever the list)
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail

rounds=7
cpus=""
rt=0
baseline_libs=()
mode_list="steps,nosampling,forwarded"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --cpus) cpus="$2"; shift ;;
        --rt) rt=1 ;;
        --baseline-lib) baseline_libs+=("$(realpath "$2")"); shift ;;
        --modes) mode_list="$2"; shift ;;
        -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
command -v perf >/dev/null || { echo "perf not found (Debian package linux-perf)" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
echo "building stallscope (cargo build --release)..." >&2
cargo build --release --quiet
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-faith.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -g -pthread -no-pie -o "$work/mh" benches/programs/mutex_handoffs.c
word=$(nm "$work/mh" | awk '$3 == "lock" { print "0x" $1 }')
[ -n "$word" ] || { echo "no address for the lock" >&2; exit 1; }
pin=()
[ -z "$cpus" ] || pin=(taskset -c "$cpus")
rtprio=()
[ "$rt" = 0 ] || rtprio=(chrt -f 10)
modes=(plain)
for m in ${mode_list//,/ }; do
    case "$m" in
        plain) ;;
        steps|nosampling|forwarded|cpuonly|wallonly|again|perfrec) modes+=("$m") ;;
        *) echo "unknown mode: $m" >&2; exit 2 ;;
    esac
done
for ((b = 0; b < ${#baseline_libs[@]}; b++)); do modes+=("baseline$b"); done

# run_one MODE: prints "handoffs waits wakes contended".
run_one() {
    local mode="$1" prof="$work/p.prof" cmd
    rm -f "$prof"
    case "$mode" in
        plain|again) cmd=("$work/mh") ;;
        steps) cmd=("$stallscope" run -q -o "$prof" -- "$work/mh") ;;
        nosampling) cmd=("$stallscope" run -q --no-sampling -o "$prof" -- "$work/mh") ;;
        forwarded) cmd=(env STALLSCOPE_LOCK_STEPS=0 "$stallscope" run -q -o "$prof" -- "$work/mh") ;;
        cpuonly) cmd=("$stallscope" run -q --wall-hz 0 -o "$prof" -- "$work/mh") ;;
        wallonly) cmd=("$stallscope" run -q --sample-hz 0 -o "$prof" -- "$work/mh") ;;
        perfrec) cmd=(perf record -q -B -F 1000 -g -o "$work/perf.data" -- "${rtprio[@]}" "$work/mh") ;;
        baseline*) cmd=(env STALLSCOPE_PRELOAD_LIB="${baseline_libs[${mode#baseline}]}" "$stallscope" run -q -o "$prof" -- "$work/mh") ;;
    esac
    local out
    out=$(perf stat -x, -o "$work/stat" \
        -e syscalls:sys_enter_futex --filter "uaddr == $word && op == 128" \
        -e syscalls:sys_enter_futex --filter "uaddr == $word && op == 129" \
        -- "${pin[@]}" $([ "$mode" = perfrec ] || echo "${rtprio[@]}") "${cmd[@]}")
    local handoffs waits wakes contended=-
    handoffs=$(echo "$out" | awk '{ print $3 }')
    waits=$(grep sys_enter_futex "$work/stat" | sed -n 1p | cut -d, -f1)
    wakes=$(grep sys_enter_futex "$work/stat" | sed -n 2p | cut -d, -f1)
    if [ "$mode" != plain ] && [ "$mode" != again ] && [ "$mode" != perfrec ]; then
        contended=$("$stallscope" report --json "$prof" |
            python3 -c 'import json,sys; print(sum(l["contended"] for l in json.load(sys.stdin)["locks"] if l["kind"] == "mutex"))')
    fi
    echo "$handoffs $waits $wakes $contended"
}

declare -A figs
for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds ($(cut -d' ' -f1-3 /proc/loadavg))..." >&2
    for ((k = 0; k < ${#modes[@]}; k++)); do
        mode=${modes[$(((k + r - 1) % ${#modes[@]}))]}
        figs[$mode]+="$(run_one "$mode");"
    done
done

# stat MODE COLUMN: median (min-max) of one figure over the rounds.
stat() {
    echo "${figs[$1]}" | tr ';' '\n' | grep . | awk -v c="$2" '{ print $c }' | grep -v '^-$' | sort -n |
        awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit } m = NR % 2 ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2); printf "%d (%d-%d)", m, v[1], v[NR] }'
}
# mode_name MODE: the mode as the tables name it.
mode_name() {
    case "$1" in
        plain) echo "unprofiled" ;;
        steps) echo "stallscope run (lock steps)" ;;
        nosampling) echo "run --no-sampling (lock steps)" ;;
        forwarded) echo "STALLSCOPE_LOCK_STEPS=0" ;;
        cpuonly) echo "run --wall-hz 0 (CPU samples only)" ;;
        wallonly) echo "run --sample-hz 0 (wall samples only)" ;;
        again) echo "unprofiled again (A/A)" ;;
        perfrec) echo "unprofiled under perf record -F 1000 -g" ;;
        baseline*) echo "lock steps, $(basename "${baseline_libs[${1#baseline}]}")" ;;
    esac
}
echo
echo "mutex_handoffs (2 threads, 5,000,000 acquisitions), $rounds interleaved rounds${cpus:+, taskset -c $cpus}$([ "$rt" = 0 ] || echo ", chrt -f 10"); median (min-max)."
echo
echo "| mode | hand-offs (program) | futex waits (kernel) | futex wakes (kernel) | contended (profile) |"
echo "|---|---|---|---|---|"
for mode in "${modes[@]}"; do
    echo "| $(mode_name "$mode") | $(stat "$mode" 1) | $(stat "$mode" 2) | $(stat "$mode" 3) | $(stat "$mode" 4) |"
done

# The same rounds as ratios to the unprofiled run of the same round (the machine's drift between
# rounds cancels): median and the middle half (quartiles) of the per-round ratios.
echo
echo "Per round, each figure over the unprofiled run's of the same round: median (quartiles)."
echo
echo "| mode | hand-offs | futex waits | futex wakes |"
echo "|---|---|---|---|"
for mode in "${modes[@]}"; do
    [ "$mode" != plain ] || continue
    row=$(python3 - "${figs[plain]}" "${figs[$mode]}" <<'PY'
import statistics, sys
plain = [r.split() for r in sys.argv[1].split(";") if r]
mode = [r.split() for r in sys.argv[2].split(";") if r]
cells = []
for c in range(3):
    ratios = sorted(float(m[c]) / float(p[c]) for p, m in zip(plain, mode) if float(p[c]) > 0)
    if len(ratios) < 2:
        cells.append("-")
        continue
    q = statistics.quantiles(ratios, n=4)
    cells.append("%.2f (%.2f-%.2f)" % (statistics.median(ratios), q[0], q[2]))
print(" | ".join(cells))
PY
)
    echo "| $(mode_name "$mode") | $row |"
done
