#!/usr/bin/env bash
# Does the profile change what it measures? A program's lock behaviour counted without stallscope
# and under it, by counters that are not stallscope's. The programs (--program):
#   mutex   two threads take one mutex 5 million times (benches/programs/mutex_handoffs.c,
#           mutex_shared.c's loop); the program counts its hand-offs (acquisitions by the thread
#           that did not hold it last)
#   cond    a producer and a consumer pass 400,000 items through a 16-slot queue under a mutex and
#           two condition variables (cond_handoffs.c); the program counts the mutex's hand-offs
#           and its condition waits (a consumer that found the queue empty, a producer that found
#           it full)
#   cond4   the same with two producers and two consumers
#   ompcrit the mutex program's loop with an OpenMP named critical section (omp_handoffs.c, gcc
#           -fopenmp: libgomp, whose section word is the program's .gomp_critical_user_handoff);
#           the program counts its hand-offs
#   rwlock  a reader and a writer share a read-write lock (rwlock_handoffs.c 1); the program
#           counts the acquisitions that had to wait (a failed try before it blocked), the
#           writer's and the reader's
# and per run the kernel's counts, from perf's syscalls tracepoints filtered on the addresses of
# the program's lock words:
#   waits     futex waits (FUTEX_WAIT, FUTEX_WAIT_BITSET, private): a thread that went to sleep
#   wakes     futex wakes (FUTEX_WAKE, FUTEX_WAKE_BITSET, private): a release or signal that woke,
#             or tried to
#   contended the profile's contended acquisitions (profiled runs only)
# for the unprofiled program, `stallscope run` (lock steps on, the default), `stallscope run
# --no-sampling` (the lock hooks without the thread-state sampler's signals and /proc reads) and
# `stallscope run` with STALLSCOPE_LOCK_STEPS=0 (the hooks forward to glibc), interleaved (the mode
# that starts rotates per round). The table gives each figure's median over the rounds with its min-max.
# Needs perf and root (or perf_event_paranoid -1 and tracefs access).
#
# Usage: benches/faithfulness.sh [--program NAME] [--rounds N] [--cpus LIST] [--rt] [--modes LIST] [--baseline-lib PATH]...
#   --program NAME  mutex (default), ompcrit, cond, cond4 or rwlock (above)
#   --cpus LIST  run every mode under taskset -c LIST
#   --rt         run every mode at real-time priority (chrt -f 10, root): the two threads run
#                together whenever there are two CPUs, whatever else the machine runs. Without
#                it, on a machine busy with other work, whether they overlap at all decides the
#                figures (hand-offs from 10 to 30,000 from run to run at load 6).
#   --baseline-lib PATH  add a mode: `stallscope run` with that interposer (STALLSCOPE_PRELOAD_LIB;
#                an A/B of two builds, interleaved with the others; benches/interposer_at.sh builds
#                a revision's with the product's flags); may be given more than once
#   --modes LIST which modes to run, comma-separated (plain is always run: the ratios need it);
#                default plain,steps,nosampling,forwarded. Besides those four:
#                  cpuonly   `stallscope run --wall-hz 0`: the CPU samples' signals, no /proc reads
#                  wallonly  `stallscope run --sample-hz 0`: the flusher's /proc reads, no signals
#                  again     the unprofiled program again: an A/A control, whose ratios to
#                            `plain` are the run-to-run spread alone
#                  passthrough  the program with an LD_PRELOAD library whose lock functions only
#                            call glibc's (benches/programs/lock_passthrough.c): what
#                            interposing at all changes
#                  perfrec   the unprofiled program under `perf record -F 1000 -g`: what a
#                            kernel sampling profiler at stallscope's CPU sample rate costs it
#                            (with --rt, perf itself is not real-time, only the program)
#                (--baseline-lib adds its modes, whatever the list)
#   --no-perf    without perf (a machine that has none): the program's own counters and the
#                profile's, the kernel's columns left empty
#   --glibc DIR  run the program through another C library's loader (DIR holds its
#                ld-linux-x86-64.so.2 and libc.so.6: `DIR/ld-linux-x86-64.so.2 --library-path DIR`), as
#                benches/glibc_versions.sh --fetch extracts them: another glibc's lock code on this machine
#   --prebuilt DIR  build nothing: stallscope, the programs and the pass-through library are
#                DIR/stallscope, DIR/PROGRAM (mutex_handoffs, cond_handoffs, rwlock_handoffs, built
#                with -no-pie) and DIR/lock_passthrough.so, as benches/prebuild.sh DIR leaves them
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail

rounds=7
program=mutex
cpus=""
rt=0
baseline_libs=()
mode_list="steps,nosampling,forwarded"
use_perf=1
prebuilt=""
glibc=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --program) program="$2"; shift ;;
        --cpus) cpus="$2"; shift ;;
        --rt) rt=1 ;;
        --baseline-lib) baseline_libs+=("$(realpath "$2")"); shift ;;
        --modes) mode_list="$2"; shift ;;
        --no-perf) use_perf=0 ;;
        --prebuilt) prebuilt="$(cd "$2" && pwd)"; shift ;;
        --glibc) glibc="$(cd "$2" && pwd)"; shift ;;
        -h|--help) sed -n '2,59p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$use_perf" = 0 ] || command -v perf >/dev/null ||
    { echo "perf not found (Debian package linux-perf; or --no-perf)" >&2; exit 1; }

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ -n "$prebuilt" ]; then
    stallscope="$prebuilt/stallscope"
else
    echo "building stallscope (cargo build --release)..." >&2
    cargo build --release --quiet
    stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-faith.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The program, its arguments, its title, the global holding its lock words and its compiler flags.
cflags=(-pthread)
case "$program" in
    mutex) source=mutex_handoffs; args=(); symbol=lock; title="mutex_handoffs (2 threads, 5,000,000 acquisitions)" ;;
    ompcrit) source=omp_handoffs; args=(); symbol=.gomp_critical_user_handoff; cflags=(-fopenmp)
        title="omp_handoffs (2 threads of a parallel region, a named critical section 5,000,000 times)" ;;
    cond) source=cond_handoffs; args=(1); symbol=words; title="cond_handoffs (a producer and a consumer, 400,000 items)" ;;
    cond4) source=cond_handoffs; args=(2); symbol=words; title="cond_handoffs 2 (two producers and two consumers, 400,000 items)" ;;
    rwlock) source=rwlock_handoffs; args=(1); symbol=lock; title="rwlock_handoffs 1 (a reader, 300,000 reads, and a writer, 100,000 writes)" ;;
    *) echo "unknown program: $program" >&2; exit 2 ;;
esac
if [ -n "$prebuilt" ]; then
    cp "$prebuilt/$source" "$work/mh"
    cp "$prebuilt/lock_passthrough.so" "$work/passthrough.so"
else
    cc -O2 -g "${cflags[@]}" -no-pie -o "$work/mh" "benches/programs/$source.c"
    cc -O2 -shared -fPIC -o "$work/passthrough.so" benches/programs/lock_passthrough.c -ldl
fi
word=0 size=0
if [ "$use_perf" = 1 ]; then
    read -r word size < <(nm -S "$work/mh" | awk -v s="$symbol" '$4 == s { print "0x" $1, "0x" $2 }')
    [ -n "$word" ] || { echo "no address for the lock" >&2; exit 1; }
fi
end=$(printf '0x%x' $((word + size)))
# Private futex operations: WAIT 128, WAIT_BITSET 137 (and with CLOCK_REALTIME 393); WAKE 129,
# WAKE_BITSET 138.
wait_filter="uaddr >= $word && uaddr < $end && (op == 128 || op == 137 || op == 393)"
wake_filter="uaddr >= $word && uaddr < $end && (op == 129 || op == 138)"
# The program as every mode starts it: itself, or through the other glibc's loader.
prog=("$work/mh")
[ -z "$glibc" ] || prog=("$glibc/ld-linux-x86-64.so.2" --library-path "$glibc" "$work/mh")
pin=()
[ -z "$cpus" ] || pin=(taskset -c "$cpus")
rtprio=()
[ "$rt" = 0 ] || rtprio=(chrt -f 10)
modes=(plain)
for m in ${mode_list//,/ }; do
    case "$m" in
        plain) ;;
        steps|nosampling|forwarded|cpuonly|wallonly|again|perfrec|passthrough) modes+=("$m") ;;
        *) echo "unknown mode: $m" >&2; exit 2 ;;
    esac
done
for ((b = 0; b < ${#baseline_libs[@]}; b++)); do modes+=("baseline$b"); done

# run_one MODE: prints "handoffs waits wakes contended".
run_one() {
    local mode="$1" prof="$work/p.prof" cmd
    rm -f "$prof"
    case "$mode" in
        plain|again) cmd=("${prog[@]}" "${args[@]}") ;;
        passthrough) cmd=(env LD_PRELOAD="$work/passthrough.so" "${prog[@]}" "${args[@]}") ;;
        steps) cmd=("$stallscope" run -q -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
        nosampling) cmd=("$stallscope" run -q --no-sampling -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
        forwarded) cmd=(env STALLSCOPE_LOCK_STEPS=0 "$stallscope" run -q -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
        cpuonly) cmd=("$stallscope" run -q --wall-hz 0 -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
        wallonly) cmd=("$stallscope" run -q --sample-hz 0 -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
        perfrec) cmd=(perf record -q -B -F 1000 -g -o "$work/perf.data" -- "${rtprio[@]}" "${prog[@]}" "${args[@]}") ;;
        baseline*) cmd=(env STALLSCOPE_PRELOAD_LIB="${baseline_libs[${mode#baseline}]}" "$stallscope" run -q -o "$prof" -- "${prog[@]}" "${args[@]}") ;;
    esac
    local out waits=- wakes=-
    if [ "$use_perf" = 1 ]; then
        out=$(perf stat -x, -o "$work/stat" \
            -e syscalls:sys_enter_futex --filter "$wait_filter" \
            -e syscalls:sys_enter_futex --filter "$wake_filter" \
            -- "${pin[@]}" $([ "$mode" = perfrec ] || echo "${rtprio[@]}") "${cmd[@]}")
        waits=$(grep sys_enter_futex "$work/stat" | sed -n 1p | cut -d, -f1)
        wakes=$(grep sys_enter_futex "$work/stat" | sed -n 2p | cut -d, -f1)
    else
        out=$("${pin[@]}" "${rtprio[@]}" "${cmd[@]}")
    fi
    local counts contended=-
    # The program's counters: the values of its output's "NAME VALUE" pairs (after the first word).
    counts=$(echo "$out" | awk '{ for (i = 3; i <= NF; i += 2) printf "%s ", $i }')
    if [ "$mode" != plain ] && [ "$mode" != again ] && [ "$mode" != perfrec ] && [ "$mode" != passthrough ]; then
        contended=$("$stallscope" report --json "$prof" |
            python3 -c 'import json,sys; print(sum(l["contended"] for l in json.load(sys.stdin)["locks"] if l["kind"] in ("mutex", "omp-critical", "omp-lock") or l["kind"].startswith("rwlock")))')
    fi
    echo "$counts$waits $wakes $contended"
}
# The program's counters' names, from one run of it.
names=$("${prog[@]}" "${args[@]}" | awk '{ for (i = 2; i <= NF; i += 2) printf "%s ", $i }')
read -r -a names <<<"$names"
ncounts=${#names[@]}

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
    echo "${figs[$1]}" | tr ';' '\n' | grep . | awk -v c="$2" '{ print $c }' | { grep -v '^-$' || true; } | sort -n |
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
        passthrough) echo "pass-through LD_PRELOAD (control)" ;;
        perfrec) echo "unprofiled under perf record -F 1000 -g" ;;
        baseline*) echo "lock steps, $(basename "${baseline_libs[${1#baseline}]}")" ;;
    esac
}
echo
echo "$title, $rounds interleaved rounds${cpus:+, taskset -c $cpus}$([ "$rt" = 0 ] || echo ", chrt -f 10"); median (min-max)."
echo
header="| mode |"
rule="|---|"
for n in "${names[@]}"; do header+=" $n (program) |"; rule+="---|"; done
echo "$header futex waits (kernel) | futex wakes (kernel) | contended (profile) |"
echo "$rule---|---|---|"
for mode in "${modes[@]}"; do
    row="| $(mode_name "$mode") |"
    for ((c = 1; c <= ncounts + 3; c++)); do row+=" $(stat "$mode" "$c") |"; done
    echo "$row"
done

# The same rounds as ratios to the unprofiled run of the same round (the machine's drift between
# rounds cancels): median and the middle half (quartiles) of the per-round ratios.
echo
echo "Per round, each figure over the unprofiled run's of the same round: median (quartiles)."
echo
header="| mode |"
for n in "${names[@]}"; do header+=" $n |"; done
echo "$header futex waits | futex wakes |"
echo "$rule---|---|"
for mode in "${modes[@]}"; do
    [ "$mode" != plain ] || continue
    row=$(python3 - "${figs[plain]}" "${figs[$mode]}" "$((ncounts + 2))" <<'PY'
import statistics, sys
plain = [r.split() for r in sys.argv[1].split(";") if r]
mode = [r.split() for r in sys.argv[2].split(";") if r]
cells = []
for c in range(int(sys.argv[3])):
    # "-": a figure this run has not (the kernel's without perf)
    ratios = sorted(float(m[c]) / float(p[c]) for p, m in zip(plain, mode)
                    if "-" not in (p[c], m[c]) and float(p[c]) > 0)
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
