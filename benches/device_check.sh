#!/usr/bin/env bash
# What stallscope does on a bigger machine than the 2-core one it is developed on, in one run that
# needs neither cargo nor compilers there: build with `benches/prebuild.sh DIR` here, copy DIR and
# the repository over, run this there. Each step has a time limit of its own, and a step that fails
# leaves the others to run; everything it prints goes into OUTDIR:
#   machine.txt    the machine: CPUs, glibc, kernel, load
#   findings.txt   each cause program (tests/cause_programs) and each runtime program (OpenMP,
#                  oneTBB, Rust) at THREADS under `stallscope run`: its exit status,
#                  whether its output is the unprofiled run's, the report's findings; each report
#                  (text and JSON, made there: symbols are that machine's) and the program's
#                  stderr in findings/
#   faith-*.txt    benches/faithfulness.sh --no-perf: the programs' own hand-off counts, profiled
#                  against unprofiled (cond4, mutex, ompcrit)
#   overhead.txt   benches/overhead.sh on most of its cases, at their usual two
#                  threads (OMP_NUM_THREADS=2), with the LD_PRELOAD-only mode
#   scale-*.txt    `stallscope scale` of a clean program and a contended one up to THREADS
#   foreign.txt    programs of that machine's own (its python3 with threads, numpy) under
#                  `stallscope run`
#   device_check.tar.gz  all of the above in one file
#
# Usage: benches/device_check.sh PREBUILT OUTDIR [THREADS] [SECONDS]
#   THREADS  threads for the findings and the top of the scale curves (default: the CPUs)
#   SECONDS  start no step after this long (default 500)
# Environment: DEVICE_STEPS (the steps to run, comma-separated: machine, findings, foreign,
# overhead, faith-cond4, faith-mutex, faith-ompcrit, scale-clean, scale-arena; default all) and DEVICE_PROGRAMS
# (the findings step's programs, by name: a cause program's or a runtime one's such as omp_*,
# separated by spaces; default all); CAUSE_TRUTH=1 has the cause programs print what the kernel
# says of each thread (tests/cause_programs/truth.h) into the profiled run's .err file.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 PREBUILT OUTDIR [THREADS] [SECONDS]" >&2; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(cd "$1" && pwd)"
mkdir -p "$2"
out="$(cd "$2" && pwd)"
threads="${3:-$(nproc)}"
budget="${4:-500}"
stallscope="$bin/stallscope"
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
start=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-device.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# step NAME LIMIT COMMAND...: runs the command with its output in OUTDIR/NAME.txt, unless the
# budget is spent.
step() {
    local name="$1" limit="$2"
    shift 2
    if [ -n "${DEVICE_STEPS:-}" ] && [[ ",$DEVICE_STEPS," != *",$name,"* ]]; then
        return
    fi
    if ((SECONDS - start + 10 > budget)); then
        echo "$name: skipped, budget spent" | tee -a "$out/steps.txt"
        return
    fi
    local t0=$SECONDS
    ((limit > budget - (SECONDS - start))) && limit=$((budget - (SECONDS - start)))
    # a function of this script runs in a child bash, which has them all exported
    timeout --kill-after=5 "$limit" bash -c '"$@"' _ "$@" >"$out/$name.txt" 2>&1
    echo "$name: rc $? in $((SECONDS - t0)) s" | tee -a "$out/steps.txt"
}

machine() {
    echo "cpus: $(nproc)"
    grep -m1 'model name' /proc/cpuinfo
    ldd --version 2>&1 | head -1
    uname -a
    echo "load: $(cat /proc/loadavg)"
    echo "perf_event_paranoid: $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"
    # SMT siblings and cores: a thread sharing a core runs slower, whatever the program does
    lscpu 2>/dev/null | grep -i 'thread\|core\|socket\|numa\|mhz\|hypervisor' | grep -v '^Flags'
    local c
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        echo "$(basename "$c"): core $(cat "$c/topology/core_id" 2>/dev/null) package $(cat "$c/topology/physical_package_id" 2>/dev/null) siblings $(cat "$c/topology/thread_siblings_list" 2>/dev/null)"
    done
    "$stallscope" --version
}

# profile_one NAME ENV... -- CMD...: the unprofiled run and the profiled one, compared; the report
# of the profile in text and JSON.
profile_one() {
    local name="$1"
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if [ -n "${DEVICE_PROGRAMS:-}" ] && [[ " $DEVICE_PROGRAMS " != *" ${name%.*} "* ]]; then
        return
    fi
    local p="$work/prof/$name"
    mkdir -p "$work/prof"
    # --foreground: in the step's process group, which the step's own limit kills whole
    env "${envs[@]}" timeout --foreground 60 "$@" >"$p.plain.out" 2>/dev/null
    local plain_rc=$?
    env "${envs[@]}" timeout --foreground 60 "$stallscope" run -q -o "$p.prof" -- "$@" >"$p.out" 2>"$p.err"
    local rc=$?
    local same=same
    # figures that change from run to run (times, throughput) left out
    cmp -s <(grep -v 'ms$\|ms \|throughput\|[0-9]\.[0-9]' "$p.plain.out") \
        <(grep -v 'ms$\|ms \|throughput\|[0-9]\.[0-9]' "$p.out") || same=differs
    # the reports (not the profiles: too large to bring back) where the step's end cannot lose them
    local r="$out/findings/$name"
    mkdir -p "$out/findings"
    cp "$p.err" "$r.err"
    "$stallscope" report "$p.prof" >"$r.txt" 2>&1
    "$stallscope" report --json "$p.prof" >"$r.json" 2>/dev/null
    echo "== $name: rc $rc (unprofiled $plain_rc), output $same"
    python3 - "$r.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print("   no JSON:", e)
    sys.exit()
for f in r.get("findings", []):
    print("   %-7s %-28s %s" % (f["severity"], f["id"], f["title"][:150]))
PY
}

findings() {
    local n
    for n in "$threads"; do
        local f name
        for f in "$bin"/causes/*; do
            name="$(basename "$f")"
            case "$name" in
                exit_in_hold|idle_pool|snapshot_heavy) profile_one "$name.$n" -- "$f" ;;
                *) profile_one "$name.$n" -- "$f" "$n" ;;
            esac
        done
        for f in "$bin"/runtimes/omp_*; do
            profile_one "$(basename "$f").$n" OMP_NUM_THREADS="$n" -- "$f"
        done
        profile_one "tbb_itt_mutexes.$n" -- "$bin/runtimes/tbb_itt_mutexes" queuing "$n"
        for f in "$bin"/runtimes/tbb_spin_mutex "$bin"/runtimes/tbb_balanced_reduce "$bin"/runtimes/rust_*; do
            profile_one "$(basename "$f").$n" -- "$f" "$n"
        done
    done
}

foreign() {
    local py
    # the interpreter itself, not a shim script in front of it
    py="$(python3 -c 'import sys; print(sys.executable)')"
    echo "python3: $py $("$py" --version 2>&1)"
    cat >"$work/gil.py" <<'PY'
import hashlib, threading, time
def spin(n):
    s = 0
    for i in range(n):
        s += i * i
def digest(n):
    h = hashlib.sha256()
    for _ in range(n):
        h.update(b"x" * 4096)
t0 = time.time()
ts = [threading.Thread(target=spin, args=(1_500_000,)) for _ in range(4)]
ts += [threading.Thread(target=digest, args=(20_000,)) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("done")
PY
    profile_one py_threads -- "$py" "$work/gil.py"
    cat "$out/findings/py_threads.txt"
    cat >"$work/np.py" <<'PY'
import numpy as np
a = np.random.rand(1200, 1200)
for _ in range(20):
    a = a @ a
    a /= np.abs(a).max()
print("done")
PY
    profile_one numpy_matmul -- "$py" "$work/np.py"
    cat "$out/findings/numpy_matmul.txt"
}

export root bin out threads stallscope work counts
export -f machine profile_one findings foreign
cd "$root"
step machine 20 machine
# the scale curves' thread counts: 1, 2, 4, 8 and THREADS, each once
counts="$(printf '%s\n' 1 2 4 8 "$threads" | sort -nu | paste -sd,)"
step findings 300 findings
step foreign 90 foreign
step overhead 200 env OMP_NUM_THREADS=2 bash benches/overhead.sh --prebuilt "$bin" --rounds 7 --no-heaptrack --preload \
    --cases alloc,alloclong,pell,stream,mutex,compute,omp,ompcrit,rustmutex,tbb,syscalls,forkcpu,fork,startup
step faith-cond4 90 bash benches/faithfulness.sh --prebuilt "$bin" --no-perf --program cond4 --rounds 11 --modes again,steps,forwarded
step faith-mutex 45 bash benches/faithfulness.sh --prebuilt "$bin" --no-perf --program mutex --rounds 15 --modes again,steps,forwarded
step faith-ompcrit 45 bash benches/faithfulness.sh --prebuilt "$bin" --no-perf --program ompcrit --rounds 15 --modes again,steps,forwarded
step scale-clean 60 "$stallscope" scale --no-progress --threads "$counts" --runs 3 \
    --export-json "$out/scale-clean.json" -- "$bin/causes/clean_scaling" '{threads}'
step scale-arena 60 "$stallscope" scale --no-progress --threads "$counts" --runs 3 \
    --export-json "$out/scale-arena.json" -- "$bin/causes/arena_lock" '{threads}'
echo "total: $((SECONDS - start)) s" | tee -a "$out/steps.txt"
# the summary, for a reader of the output's end
grep -h '^==\|^   \(high\|medium\)' "$out/findings.txt" "$out/foreign.txt" 2>/dev/null | cut -c1-160
tail -14 "$out/overhead.txt" 2>/dev/null
tail -6 "$out/faith-cond4.txt" "$out/faith-mutex.txt" 2>/dev/null
# the folder in one file (a machine may return only a few)
tar -C "$out" -czf "$work/device_check.tar.gz" . && mv "$work/device_check.tar.gz" "$out/"
