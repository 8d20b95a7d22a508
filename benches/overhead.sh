#!/usr/bin/env bash
# Overhead of `stallscope run` (and of heaptrack) against the unprofiled program, side by side in
# one run. Cases (programs in benches/programs/ unless said):
#   alloc     two threads, each 5 million malloc/free of 8..128 bytes in batches of 64   (wall)
#   alloclong the same, 40 million each (about 0.8 s): beside alloc, what the hooks cost per unit
#             of work, with the fixed cost of a start (the `startup` row) spread over 8 times the
#             work                                                                       (wall)
#   mutex     two threads taking one shared mutex 5 million times in total               (wall)
#   compute   a compute-bound loop of about 1 s, no allocation                           (wall)
#   churn     larson-like: blocks of 8..1000 bytes replaced at random, tables swapped
#             between 2 threads                                                   (throughput)
#   prodcons  xmalloc-test-like: a producer allocates, a consumer frees, batches
#             through a mutex and condition variables                             (throughput)
#   sizes     glibc-thread-like: 2 threads replacing blocks of 4 B..32 KiB        (throughput)
#   pell      cfrac-like: one thread, bignum arithmetic allocating every result            (wall)
#   stress    mstress-like: rounds of new threads allocating, keeping, passing on objects  (wall)
#   rwlock    one thread, a read-mostly pthread_rwlock_t (one write in 1000)               (wall)
#   stream    demos/stream_parse.cpp `slow` from two threads (an istringstream per line)   (wall)
#   rustmutex tests/rust_programs std_mutex: a contended std::sync::Mutex under rayon, 2 threads
#             (its futex waits go through the syscall() hook; built with cargo)          (wall)
#   syscalls  one thread, 5 million syscall(SYS_getppid): the hook's cost on calls that are
#             not futex waits                                                           (wall)
#   omp       tests/omp_programs/small_regions.c (gcc -fopenmp): 300,000 runs of a parallel
#             region of 256 cheap iterations (fork-join bound)                          (wall)
#   ompcrit   tests/omp_programs/short_locks.c (gcc -fopenmp): 1,000,000 iterations of a parallel
#             loop, each taking an omp lock, a nest lock twice, the unnamed critical section
#             and a named one around an addition (acquisition-bound)                   (wall)
#   tbb       tests/tbb_programs/balanced_reduce.cpp (oneTBB, libtbb-dev): 8 rounds of a
#             parallel_reduce on 2 threads; stallscope is its ITT collector             (wall)
#   forkcpu   fork_rate.c: 500 children that only _exit, each waited for: the program's own CPU
#             time per fork, its children's included (it prints it)                     (cpueach)
#   fork      the same, the whole command (the supervisor's files of the 500 children)  (wall)
#   forkexec  fork_rate.c: 500 children that exec /bin/true, each waited for            (wall)
#   startup   /bin/true: what `stallscope run` costs a program that does nothing (its own start,
#             the interposer's start and final flush, the profile's file)               (wall)
# Throughput cases run for a fixed time and report operations per second (ratio: profiled /
# unprofiled, higher is better); the others do fixed work and report the wall time of the whole
# command (ratio: profiled / unprofiled, lower is better). Each round runs every case in every
# mode, interleaved (the mode that starts rotates from round to round). The table gives, per mode,
# the median over the rounds with the min-max range, and the median of the per-round ratios (each
# round's profiled run against the same round's unprofiled run) with their min-max range.
#
# Usage: benches/overhead.sh [--rounds N] [--quick] [--no-heaptrack] [--extra] [--cpu] [--cases LIST]
#                            [--lib PATH] [--baseline-lib PATH]
#   --rounds N          rounds (default 7)
#   --quick             3 rounds, no heaptrack
#   --preload           also a mode "LD_PRELOAD only": the interposer without `stallscope run` (its
#                       profile written into a scratch directory), which tells the cost inside the
#                       program from the supervisor's fixed cost
#   --extra             also the other side of each trade-off: `stallscope run --no-sampling`,
#                       `--timing exact`, `--no-stacks`, stacks by libgcc's unwinder alone
#                       (STALLSCOPE_FAST_UNWIND=0), and allocator calls timed 1 in 256 throughout
#                       (STALLSCOPE_TIMING_LONGER=0: the period never lengthens)
#   --cpu               fixed-work cases report the CPU time (user + system, from wait4, to the
#                       microsecond: benches/cpu_time.py) of the whole command instead of its wall
#                       time: on a machine loaded by other work, time spent waiting for a CPU is
#                       left out (the throughput cases are unchanged)
#   --cases a,b,...     a subset of the cases
#   --lib PATH          profile with this build of the interposer (STALLSCOPE_PRELOAD_LIB)
#   --baseline-lib PATH add a mode "baseline": stallscope with that interposer (A/B of two builds;
#                       build it with benches/interposer_at.sh REVISION PATH, the product's flags)
#   --prebuilt DIR      build nothing: stallscope and the cases' programs are DIR/stallscope and
#                       DIR/CASE, as benches/prebuild.sh DIR leaves them (for a machine without
#                       cargo or compilers; its libgomp and libtbb from DIR/lib where it has none)
# This is a benchmark, not a test: it asserts nothing, and the machine's noise shows in the ranges.
set -euo pipefail

rounds=7
use_heaptrack=1
extra=0
preload=0
cpu=0
only=""
lib=""
baseline_lib=""
prebuilt=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) rounds=3; use_heaptrack=0 ;;
        --rounds) rounds="$2"; shift ;;
        --no-heaptrack) use_heaptrack=0 ;;
        --extra) extra=1 ;;
        --preload) preload=1 ;;
        --cpu) cpu=1 ;;
        --cases) only="$2"; shift ;;
        --lib) lib="$2"; shift ;;
        --baseline-lib) baseline_lib="$2"; shift ;;
        --prebuilt) prebuilt="$2"; shift ;;
        -h|--help) sed -n '2,58p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
    shift
done

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
if [ -n "$prebuilt" ]; then
    prebuilt="$(cd "$prebuilt" && pwd)"
    stallscope="$prebuilt/stallscope"
    [ -d "$prebuilt/lib" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$prebuilt/lib"
else
    echo "building stallscope (cargo build --release)..." >&2
    cargo build --release --quiet
    stallscope="${CARGO_TARGET_DIR:-$root/target}/release/stallscope"
fi
[ -x "$stallscope" ] || { echo "no $stallscope" >&2; exit 1; }
[ -z "$lib" ] || lib="$(abs "$lib")"
[ -z "$baseline_lib" ] || baseline_lib="$(abs "$baseline_lib")"
if [ "$use_heaptrack" = 1 ] && ! command -v heaptrack >/dev/null; then
    echo "heaptrack not found (Debian package heaptrack): heaptrack columns left out" >&2
    use_heaptrack=0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-overhead.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# shellcheck source=benches/common.sh
. "$root/benches/common.sh"
if [ -n "$only" ]; then IFS=, read -r -a cases <<<"$only"; else cases=("${BENCH_CASES[@]}"); fi
declare -A args=([alloclong]=40000000 [churn]="2 1.5" [prodcons]="1 1 1.5" [sizes]="2 1.5" [stream]="slow --threads 2"
    [rustmutex]="2 400000" [omp]=300000 [ompcrit]=1000000 [tbb]=2 [forkcpu]="0 exit 500" [fork]="0 exit 500" [forkexec]="0 exec 500")
# forkcpu: the program's own CPU time per fork (its and its children's getrusage over the loop, as
# fork_rate prints it): what fork costs the profiled program, without the supervisor's writing of
# the children's files after the run, which the whole command's `fork` row has (on a file system
# where each new inode is dear, such as ext4 without a journal after many deletions, most of it).
declare -A kind=([churn]=throughput [prodcons]=throughput [sizes]=throughput [forkcpu]=cpueach)
# The targets (docs/PERFORMANCE.md, "The cases"): what a profiled run may cost each case.
declare -A target=([alloc]="≤ 1.10x" [alloclong]="≤ 1.10x" [mutex]="≤ 1.25x" [compute]="≤ 1.03x" [churn]="≥ 0.8"
    [prodcons]="≥ 0.8" [sizes]="≥ 0.8" [pell]="≤ 1.10x" [stress]="≤ 1.25x" [rwlock]="≤ 1.15x"
    [stream]="≤ 1.03x" [rustmutex]="≤ 1.10x" [syscalls]="≤ 1.03x" [omp]="≤ 1.10x" [ompcrit]="-" [tbb]="≤ 1.10x" [forkcpu]="≤ 1.5x"
    [fork]="-" [forkexec]="-" [startup]="-")
for c in "${cases[@]}"; do
    if [ -n "$prebuilt" ] && [ "$c" != startup ]; then
        cp "$prebuilt/$c" "$work/$c" || { echo "no prebuilt $c in $prebuilt" >&2; exit 2; }
    else
        bench_build_case "$root" "$c" "$work/$c" || exit 2
    fi
done

modes=(plain sampled)
[ -n "$baseline_lib" ] && modes+=(baseline)
if [ "$preload" = 1 ]; then
    modes+=(preload)
    preload_lib="$(bench_interposer "$root" "${lib:-${prebuilt:+$prebuilt/libstallscope.so}}")"
fi
[ "$extra" = 1 ] && modes+=(nosampling exact nostacks libgcc fixedperiod)
[ "$use_heaptrack" = 1 ] && modes+=(heaptrack)
declare -A title=([plain]=unprofiled [sampled]=stallscope [baseline]="stallscope (baseline lib)"
    [preload]="LD_PRELOAD only" [nosampling]="--no-sampling" [exact]="--timing exact" [nostacks]="--no-stacks"
    [libgcc]="libgcc unwinder" [fixedperiod]="1 in 256 throughout" [heaptrack]=heaptrack)

now_ns() { date +%s%N; }

# run_one CASE MODE ROUND: runs the case, prints its figure (wall ns, or CPU ns with --cpu, or
# operations per second for a throughput case). The program's output must match the unprofiled
# run's (figures that change from run to run, lines ending in "ms" and throughput lines, left out).
run_one() {
    local c="$1" mode="$2" round="$3" out="$work/$c.$2.$3.out" prof="$work/$c.$3.$2.prof" start end
    # shellcheck disable=SC2086
    local cmd=("$work/$c" ${args[$c]:-})
    # With --cpu the whole command runs under cpu_time.py, which reports its CPU time (wait4, to the
    # microsecond) with its children's (the profiler's supervisor and recording processes included).
    # `run -q`: the closing summary is the report's analysis of the finished profile (about 70 ms
    # on these programs, symbols read once), done after the program ended: not the program's cost.
    local tm=()
    [ "$cpu" = 1 ] && tm=(python3 "$root/benches/cpu_time.py" "$work/cpu")
    mkdir -p "$work/pre"
    start=$(now_ns)
    case "$mode" in
        plain) "${tm[@]}" "${cmd[@]}" >"$out" ;;
        sampled) STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        preload) STALLSCOPE_DIR="$work/pre" LD_PRELOAD="$preload_lib" "${tm[@]}" "${cmd[@]}" >"$out" ;;
        baseline) STALLSCOPE_PRELOAD_LIB="$baseline_lib" "${tm[@]}" "$stallscope" run -q -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        nosampling) STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q --no-sampling -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        exact) STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q --timing exact -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        nostacks) STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q --no-stacks -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        libgcc) STALLSCOPE_FAST_UNWIND=0 STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        fixedperiod) STALLSCOPE_TIMING_LONGER=0 STALLSCOPE_PRELOAD_LIB="$lib" "${tm[@]}" "$stallscope" run -q -o "$prof" -- "${cmd[@]}" >"$out" 2>/dev/null ;;
        heaptrack) "${tm[@]}" heaptrack -o "$work/$c.$round.heaptrack" "${cmd[@]}" >"$out.log" 2>&1
                   # heaptrack's own lines (1.4: its banner, the preload library, its statistics
                   # indented by a tab) left out of the program's output
                   grep -v -e '^heaptrack' -e '^Heaptrack' -e '^Debuggee' -e '^starting application' \
                       -e 'libheaptrack_preload\.so$' -e "^$(printf '\t')" -e '^  ' -e '^$' "$out.log" >"$out" || true ;;
    esac
    end=$(now_ns)
    rm -rf "$prof" "$prof.children" "$work/$c.$round".heaptrack* "$work/pre"/*
    if [ "${kind[$c]:-wall}" = throughput ]; then
        awk '/^throughput / { print $2; found = 1 } END { if (!found) print 0 }' "$out"
    elif [ "${kind[$c]:-wall}" = cpueach ]; then
        awk '/ us CPU each/ { print $3 * 1000; found = 1 } END { if (!found) print 0 }' "$out"
    elif [ "$cpu" = 1 ]; then
        awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$work/cpu"
    else
        echo $((end - start))
    fi
}

same_output() { cmp -s <(grep -v 'ms$\|^throughput \|operations in' "$1") <(grep -v 'ms$\|^throughput \|operations in' "$2"); }

declare -A values
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds (load $(cut -d' ' -f1 /proc/loadavg))..." >&2
    for c in "${cases[@]}"; do
        n=${#modes[@]}
        for ((k = 0; k < n; k++)); do
            mode=${modes[$(((k + r - 1) % n))]}
            v=$(run_one "$c" "$mode" "$r")
            values[$c.$mode.$r]="$v"
        done
        for mode in "${modes[@]}"; do
            if [ "$mode" != plain ] && ! same_output "$work/$c.$mode.$r.out" "$work/$c.plain.$r.out"; then
                echo "warning: $c output differs under $mode (round $r)" >&2
            fi
        done
    done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

# stats: reads numbers, prints "median min max lo hi": lo-hi is a 95% confidence interval of the
# median, distribution-free (order statistics j and n+1-j, the largest j whose binomial(n, 1/2)
# tail P(B < j) is at most 2.5%); with fewer than 9 rounds it is the min-max.
stats() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    j = 1; p = 0.5 ^ NR; tail = p
    for (i = 1; i < NR / 2; i++) { p = p * (NR - i + 1) / i; if (tail + p > 0.025) break; tail += p; j = i + 1 }
    print m, v[1], v[NR], v[j], v[NR + 1 - j] }'; }
# figure KIND "median min max": a time in s or a throughput in millions per second, with its range.
figure() {
    awk -v k="$1" -v s="$2" 'BEGIN { split(s, a, " ");
        if (k == "throughput") printf "%.2f M/s (%.2f-%.2f)", a[1] / 1e6, a[2] / 1e6, a[3] / 1e6;
        else if (k == "cpueach") printf "%.0f µs (%.0f-%.0f)", a[1] / 1e3, a[2] / 1e3, a[3] / 1e3;
        else printf "%.3f s (%.3f-%.3f)", a[1] / 1e9, a[2] / 1e9, a[3] / 1e9 }'
}
# ratio_cell KIND "median min max lo hi": the median ratio, its range, and its 95% interval from
# 9 rounds on (below that the interval is the range).
ratio_cell() {
    awk -v k="$1" -v s="$2" -v n="$rounds" 'BEGIN { split(s, a, " "); x = k == "throughput" ? "" : "x";
        ci = n >= 9 ? sprintf("; CI %.3f-%.3f", a[4], a[5]) : "";
        printf "%.2f%s (%.2f-%.2f%s)", a[1], x, a[2], a[3], ci }'
}

header="| case | measure | unprofiled |"
rule="|---|---|---|"
for mode in "${modes[@]}"; do
    [ "$mode" = plain ] && continue
    header+=" ${title[$mode]} | ratio |"
    rule+="---|---|"
    [ "$mode" = sampled ] && { header+=" target |"; rule+="---|"; }
done
echo
echo "$rounds interleaved rounds; medians with the (min-max) over rounds; ratios are per round, against"
echo "the same round's unprofiled run (throughput: profiled/unprofiled, higher is better; wall or"
echo "cpu: profiled/unprofiled, lower is better), with a 95% confidence interval of their median"
echo "(CI, from 9 rounds on). Load average $load_after (1, 5, 15 min) at the end."
echo
echo "$header"
echo "$rule"
for c in "${cases[@]}"; do
    k="${kind[$c]:-wall}"
    [ "$k" = wall ] && [ "$cpu" = 1 ] && k=cpu
    plain_all=""
    for ((r = 1; r <= rounds; r++)); do plain_all+="${values[$c.plain.$r]} "; done
    row="| $c | $k | $(figure "$k" "$(echo "$plain_all" | stats)") |"
    for mode in "${modes[@]}"; do
        [ "$mode" = plain ] && continue
        all="" ratios=""
        for ((r = 1; r <= rounds; r++)); do
            all+="${values[$c.$mode.$r]} "
            ratios+="$(awk -v a="${values[$c.$mode.$r]}" -v b="${values[$c.plain.$r]}" 'BEGIN { print (b > 0 ? a / b : 0) }') "
        done
        row+=" $(figure "$k" "$(echo "$all" | stats)") | $(ratio_cell "$k" "$(echo "$ratios" | stats)") |"
        [ "$mode" = sampled ] && row+=" ${target[$c]} |"
    done
    echo "$row"
done
