#!/usr/bin/env bash
# What an allocator hook costs an allocation-bound program, measured inside one process to a
# percent (benches/programs/hook_ab.c): bignum_pell's and alloc_churn's work (one thread) call
# malloc and free through function pointers that switch, round by round (about a millisecond
# each), between glibc's functions, the floor libraries of benches/programs/hook_floor.c and the
# interposer, each loaded with dlopen. Whole-process runs (hook_floor.sh, overhead.sh) move by 5-30%
# with the host from run to run; rounds that sit next to each other do not, so differences of a
# percent show here that are lost there. What this leaves out: the interposer's start and exit,
# its flusher, thread-state sampling (off here), the supervisor, and a PLT call (here an
# indirect call, as cheap).
#
# Where a library lands in memory moves its cost by a few percent too (two copies of one build
# have measured 4% apart in one process), so each workload runs in several processes, the
# libraries loaded in another order in each: the summary gives each mode's median over them.
#
# Libraries loaded side by side in one process also share the caches and branch predictors, so
# one library's figure can depend on the others loaded with it. --one-library loads one library
# per process (beside glibc's functions), the processes of the modes taking turns: a difference
# seen both ways is not that sharing's.
#
# Usage: benches/hook_inprocess.sh [--rounds N] [--processes N] [--one-library] [--lib PATH]
#                                  [--baseline-lib PATH] [--settings NAME=VALUE[,NAME=VALUE...]]...
#   --rounds N            rounds per workload and process (default 400; each about 1 ms per mode)
#   --processes N         processes per workload (default 3), or per workload and mode with
#                         --one-library
#   --one-library         one library per process, beside glibc's functions
#   --lib PATH            the interposer to measure (default: the one `cargo build --release` embeds)
#   --baseline-lib PATH   also measure this build of the interposer (A/B of two builds;
#                         benches/interposer_at.sh REVISION PATH builds one)
#   --settings LIST       also measure the interposer loaded with these settings (for example
#                         STALLSCOPE_TIMING_PERIOD=1024); may be given more than once
# This is a benchmark, not a test: it asserts nothing but that every mode computes the same.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds=400
processes=3
one=0
lib=""
baseline=""
settings=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds="$2"; shift ;;
        --processes) processes="$2"; shift ;;
        --one-library) one=1 ;;
        --settings) settings+=("$2"); shift ;;
        --lib) lib="$2"; shift ;;
        --baseline-lib) baseline="$2"; shift ;;
        -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done
# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
lib="$(bench_interposer "$root" "$lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-inprocess.XXXXXX")"
trap 'rm -rf "$work"' EXIT
src="$root/benches/programs"
cc -O2 -I "$src" -DHOOK_AB -o "$work/hook_ab" "$src/hook_ab.c" "$src/bignum_pell.c" "$src/alloc_churn.c" -ldl -pthread
declare -A title=([0]="pass-through" [5]="the record found, nothing counted" [1]="one countdown"
    [2]="exact counts (the interposer's)" [4]="exact counts, record in a mapping" [6]="one increment per call (a table of sizes)")
floors=(0 5 1 2 4 6)
for f in "${floors[@]}"; do
    cc -O2 -shared -fPIC -DFLOOR="$f" -o "$work/floor$f.so" "$src/hook_floor.c" -ldl
done
# Distinct file names: dlopen of a path already loaded returns that library again.
cp "$lib" "$work/interposer.so"
modes=(plain)
for f in "${floors[@]}"; do modes+=("$work/floor$f.so"); done
modes+=("$work/interposer.so")
if [ -n "$baseline" ]; then
    cp "$baseline" "$work/baseline.so"
    modes+=("$work/baseline.so")
fi
for ((i = 0; i < ${#settings[@]}; i++)); do
    cp "$lib" "$work/interposer$((i + 1)).so"
    modes+=("${settings[$i]}@$work/interposer$((i + 1)).so")
done
mkdir -p "$work/prof"
# The floor libraries' records are in static TLS, which a library loaded with dlopen may take
# only from the surplus glibc keeps (optional_static_tls raises it); thread-state sampling off:
# its signals are not the hooks' cost.
export GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536 STALLSCOPE_DIR="$work/prof" \
    STALLSCOPE_SAMPLE_HZ=0 STALLSCOPE_WALL_HZ=0
echo "interposer: $lib${baseline:+; baseline: $baseline}"
for f in "${floors[@]}"; do echo "floor$f: ${title[$f]}"; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in "pell 300" "churn 100"; do
    echo
    echo "== $w ($processes processes$([ "$one" = 1 ] && echo " per library") of $rounds rounds; thread CPU time per round, ratio to plain in the same round)"
    : >"$work/ratios"
    n=$((${#modes[@]} - 1))
    for ((p = 0; p < processes; p++)); do
        if [ "$one" = 1 ]; then
            # a process per library, beside glibc's functions; the modes' order rotated per pass
            for ((k = 0; k < n; k++)); do
                # shellcheck disable=SC2086
                "$work/hook_ab" $w "$rounds" plain "${modes[$((1 + (k + p) % n))]}" | grep -v '^plain ' >>"$work/ratios"
            done
            echo "-- pass $((p + 1)) of $processes"
            continue
        fi
        # plain first (the ratios' base), the libraries loaded in an order rotated per process
        order=(plain)
        for ((k = 0; k < n; k++)); do order+=("${modes[$((1 + (k + p) % n))]}"); done
        echo "-- process $((p + 1))"
        # shellcheck disable=SC2086
        "$work/hook_ab" $w "$rounds" "${order[@]}" | tee -a "$work/ratios"
    done
    echo "-- median over the processes of each mode's median ratio"
    # A mode's name is everything before its time ("... 0.225 ms ratio 1.000 ...").
    awk '{ for (i = 1; i <= NF; i++) if ($i == "ratio") { r = $(i + 1); name = $1; for (j = 2; j < i - 2; j++) name = name " " $j; print name "\t" r } }' \
        "$work/ratios" | sort -t $'\t' -k1,1 -s | awk -F '\t' '
        function flush() { if (n) { m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; printf "%-40s %.3f  (%s)\n", cur, m, list } }
        $1 != cur { flush(); cur = $1; n = 0; list = "" }
        { v[++n] = $2; list = list (n > 1 ? " " : "") $2; for (i = n; i > 1 && v[i] < v[i - 1]; i--) { t = v[i]; v[i] = v[i - 1]; v[i - 1] = t } }
        END { flush() }'
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
