#!/usr/bin/env bash
# Overhead of `stallscope run` (defaults; --no-sampling, without thread-state sampling; and
# --timing exact) and of heaptrack,
# against the unprofiled program, on three cases (benches/programs/):
#   alloc   two threads, each 5 million malloc/free of 8..128 bytes in batches of 64
#   mutex   two threads taking and releasing one shared mutex 5 million times in total
#   compute a compute-bound loop of about 1 s, no allocation
# Each round runs every case in every mode, interleaved (the starting mode rotates per round);
# the table gives median wall times and ratios to the unprofiled run.
#
# Usage: benches/overhead.sh [--quick] [--rounds N] [--no-heaptrack]
#   --quick: 3 rounds and no heaptrack (heaptrack is ~30x slower on the alloc case).
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in it.
set -euo pipefail

rounds=5
use_heaptrack=1
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) rounds=3; use_heaptrack=0 ;;
        --rounds) rounds="$2"; shift ;;
        --no-heaptrack) use_heaptrack=0 ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
echo "building stallscope (cargo build --release)..." >&2
cargo build --release --quiet
stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
[ -x "$stallscope" ] || { echo "no $stallscope" >&2; exit 1; }
if [ "$use_heaptrack" = 1 ] && ! command -v heaptrack >/dev/null; then
    echo "heaptrack not found (Debian package heaptrack): heaptrack columns left out" >&2
    use_heaptrack=0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-overhead.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cases=(alloc mutex compute)
declare -A source=([alloc]=alloc_churn [mutex]=mutex_shared [compute]=compute)
declare -A target=([alloc]="≤ 1.5x" [mutex]="≤ 1.3x" [compute]="≤ 1.03x")
for c in "${cases[@]}"; do
    cc -O2 -pthread -o "$work/$c" "$root/benches/programs/${source[$c]}.c"
done
modes=(plain sampled nosampling exact)
[ "$use_heaptrack" = 1 ] && modes+=(heaptrack)

now_ns() { date +%s%N; }

# run_one CASE MODE ROUND: prints the wall time in ns; the output must match the plain run's.
run_one() {
    local c="$1" mode="$2" round="$3" out="$work/$c.$2.$3.out" start end
    start=$(now_ns)
    case "$mode" in
        plain) "$work/$c" >"$out" ;;
        sampled) "$stallscope" run -o "$work/$c.$round.sampled.prof" -- "$work/$c" >"$out" 2>/dev/null ;;
        nosampling) "$stallscope" run --no-sampling -o "$work/$c.$round.nosampling.prof" -- "$work/$c" >"$out" 2>/dev/null ;;
        exact) "$stallscope" run --timing exact -o "$work/$c.$round.exact.prof" -- "$work/$c" >"$out" 2>/dev/null ;;
        heaptrack) heaptrack -o "$work/$c.$round.heaptrack" "$work/$c" >"$out.log" 2>&1
                   grep -v '^heaptrack\|^  \|^$\|^Heaptrack\|^Debuggee' "$out.log" >"$out" || true ;;
    esac
    end=$(now_ns)
    echo $((end - start))
}

declare -A times
for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds..." >&2
    for c in "${cases[@]}"; do
        n=${#modes[@]}
        for ((k = 0; k < n; k++)); do
            mode=${modes[$(((k + r - 1) % n))]}
            t=$(run_one "$c" "$mode" "$r")
            times[$c.$mode]+="$t "
            if [ "$mode" != heaptrack ] && ! cmp -s "$work/$c.$mode.$r.out" "$work/$c.plain.1.out" 2>/dev/null; then
                [ -f "$work/$c.plain.1.out" ] && echo "warning: $c output differs under $mode" >&2
            fi
        done
    done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
fmt_s() { awk -v ns="$1" 'BEGIN { printf "%.3f s", ns / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }

header="| case | unprofiled | stallscope | ratio | target | --no-sampling | ratio | --timing exact | ratio |"
rule="|---|---|---|---|---|---|---|---|---|"
if [ "$use_heaptrack" = 1 ]; then
    header+=" heaptrack | ratio |"
    rule+="---|---|"
fi
echo
echo "Median wall time of $rounds interleaved rounds; ratios to the unprofiled run."
echo
echo "$header"
echo "$rule"
for c in "${cases[@]}"; do
    plain=$(echo "${times[$c.plain]}" | median)
    sampled=$(echo "${times[$c.sampled]}" | median)
    nosampling=$(echo "${times[$c.nosampling]}" | median)
    exact=$(echo "${times[$c.exact]}" | median)
    row="| $c | $(fmt_s "$plain") | $(fmt_s "$sampled") | $(ratio "$sampled" "$plain") | ${target[$c]} | $(fmt_s "$nosampling") | $(ratio "$nosampling" "$plain") | $(fmt_s "$exact") | $(ratio "$exact" "$plain") |"
    if [ "$use_heaptrack" = 1 ]; then
        ht=$(echo "${times[$c.heaptrack]}" | median)
        row+=" $(fmt_s "$ht") | $(ratio "$ht" "$plain") |"
    fi
    echo "$row"
done
