#!/usr/bin/env bash
# Instructions the interposer adds per hooked call, counted by callgrind (stable on a loaded
# machine, unlike wall time). Runs benches/programs/hook_loops.c under callgrind, counting only
# what main calls (--toggle-collect=main: start-up and the flusher thread are left out), once
# without the interposer and once with it, and prints per mode:
#   added/pair   (instructions with - without) / pairs: everything the hooks cost, the rare timed
#                and stack-sampled calls included
#   and the share of that in each function of the interposer (its hooks, with what is inlined
#   into them) and in the unwinder (libgcc_s or libunwind, on stack-sampled calls).
#
# Usage: benches/hook_cost.sh [--lib PATH] [--pairs N] [MODE...]
#   --lib PATH   the interposer to measure (default: the one `cargo build --release` embeds)
#   --pairs N    calls per loop (default 200000)
#   MODE         small mid mutex rwlock spin (default: all)
# Thread-state sampling is off (STALLSCOPE_SAMPLE_HZ=0, WALL_HZ=0): its signals are not hook
# costs, and their number depends on time. Everything else runs at its defaults.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
lib=""
pairs=200000
modes=()
while [ $# -gt 0 ]; do
    case "$1" in
        --lib) lib="$2"; shift ;;
        --pairs) pairs="$2"; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        -*) echo "unknown option: $1" >&2; exit 2 ;;
        *) modes+=("$1") ;;
    esac
    shift
done
[ ${#modes[@]} -gt 0 ] || modes=(small mid mutex rwlock spin)
command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 1; }

# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
lib="$(bench_interposer "$root" "$lib")"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-hookcost.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/hook_loops" "$root/benches/programs/hook_loops.c"

# collected MODE OUT [preload]: runs the loop under callgrind, prints the instructions collected.
collected() {
    local mode="$1" out="$2" preload="${3:-}"
    (cd "$work" && env ${preload:+LD_PRELOAD="$preload"} STALLSCOPE_DIR="$work" STALLSCOPE_SAMPLE_HZ=0 \
        STALLSCOPE_WALL_HZ=0 valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect=main \
        ./hook_loops "$mode" "$pairs" >/dev/null 2>"$out.log")
    callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

echo "interposer: $lib"
echo "pairs per loop: $pairs; instructions per pair (one call and its release or free)"
for mode in "${modes[@]}"; do
    plain=$(collected "$mode" "$work/$mode.plain.cg")
    with=$(collected "$mode" "$work/$mode.with.cg" "$lib")
    echo
    awk -v m="$mode" -v a="$with" -v b="$plain" -v n="$pairs" \
        'BEGIN { printf "%-7s added/pair %7.1f  (unprofiled %.1f, profiled %.1f)\n", m, (a - b) / n, b / n, a / n }'
    # Per function of the interposer (inlined code is listed under the file it comes from, so
    # entries are summed by function name) and the unwinder.
    callgrind_annotate --threshold=100 "$work/$mode.with.cg" 2>/dev/null |
        awk -v n="$pairs" -v lib="$lib" -v src="$root/preload/" '
            /^ *[0-9,]+ +\(/ {
                ir = $1; gsub(",", "", ir)
                line = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", line)
                obj = ""; if (match(line, / \[[^]]*\]$/)) { obj = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, 1, RSTART - 1) }
                fn = line; sub(/^.*:/, "", fn); file = line; sub(/:[^:]*$/, "", file)
                if (obj == lib || index(file, src) == 1) cost["  " fn] += ir
                else if (obj ~ /libgcc_s|libunwind/) cost["  (unwinder)"] += ir
            }
            END { for (f in cost) if (cost[f] / n >= 0.05) printf "%-28s %7.1f\n", f, cost[f] / n }' |
        sort -k2 -n -r
done
