#!/usr/bin/env python3
"""Overhead of `stallscope run` on a CPU-bound Python program, per CPython version: a pure-Python
loop in one thread, a few frames deep (benches/programs/py_cpu.py), plain and under `stallscope
run`, side by side: each round runs both (the one that starts alternates), and the table gives
per version the median over the rounds of each mode's CPU time (user + system of the whole
command, supervisor included, from wait4: on a shared machine, time spent waiting for a CPU is left
out) and wall time, and the median of the per-round ratios run/plain (last, the lowest and the
highest round's CPU ratio). Under stallscope each CPU sample also reads the thread's Python
frames (docs/STACKS.md, "Python frames").

Interpreters: Debian's /usr/bin/python3.11 and pyenv's newest 3.8 to 3.13, where installed; with
BENCH_PYTHON=TEXT only those whose path holds TEXT. With BENCH_BASELINE_LIB=PATH (another build of
the interposer, `libstallscope*.so`) a fourth mode runs `stallscope run` with that library
(STALLSCOPE_PRELOAD_LIB), its ratio to the plain run in a last column: two builds side by side.
BENCH_PROGRAM=PATH runs another Python program instead.
Usage: benches/python_overhead.py [ROUNDS]   (default 9; run `cargo build --release` first)
This is a benchmark, not a test: it asserts nothing."""
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
stallscope = os.path.join(root, "target/release/stallscope")
program = os.environ.get("BENCH_PROGRAM") or os.path.join(root, "benches/programs/py_cpu.py")


def pythons():
    found = ["/usr/bin/python3.11"] if os.path.exists("/usr/bin/python3.11") else []
    base = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    for minor in range(8, 14):
        versions = glob.glob(f"{base}/versions/3.{minor}.*/bin/python")
        versions.sort(key=lambda p: [int(x) for x in p.split("/")[-3].split(".") if x.isdigit()])
        found += versions[-1:]
    only = os.environ.get("BENCH_PYTHON", "")
    return [p for p in found if only in p]


def timed(argv, env=None):
    t = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, dict(os.environ, **(env or {})), file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} failed")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    baseline = os.environ.get("BENCH_BASELINE_LIB", "")
    modes = [0, 1, 2, 3] if baseline else [0, 1, 2]
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.prof")
        print(f"{'python':<34} {'plain cpu':>10} {'run cpu':>10} {'cpu ratio':>10} {'wall ratio':>10}"
              f" {'no-py ratio':>11}" + (f" {'baseline ratio':>14}" if baseline else "") + f" {'cpu ratio min-max':>17}")
        for py in pythons():
            version = subprocess.run([py, "--version"], capture_output=True, text=True).stdout.strip()
            plain, run, nopy, base = [], [], [], []
            for r in range(rounds):
                for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
                    if mode == 0:
                        plain.append(timed([py, program]))
                        continue
                    if os.path.exists(prof):
                        os.remove(prof)
                    argv = [stallscope, "run", "-q", "-o", prof, "--", py, program]
                    if mode == 1:
                        run.append(timed(argv))
                    elif mode == 2:
                        nopy.append(timed(argv, {"STALLSCOPE_PYTHON_FRAMES": "0"}))
                    else:
                        base.append(timed(argv, {"STALLSCOPE_PRELOAD_LIB": baseline}))
            ratios = [b[0] / a[0] for a, b in zip(plain, run)]
            cpu = statistics.median(ratios)
            wall = statistics.median(b[1] / a[1] for a, b in zip(plain, run))
            label = f"{version} ({py.split('/versions/')[-1] if '/versions/' in py else py})"
            print(f"{label:<34} {statistics.median(p[0] for p in plain):>9.3f}s "
                  f"{statistics.median(p[0] for p in run):>9.3f}s {cpu:>10.3f} {wall:>10.3f}"
                  f" {statistics.median(b[0] / a[0] for a, b in zip(plain, nopy)):>11.3f}"
                  + (f" {statistics.median(b[0] / a[0] for a, b in zip(plain, base)):>14.3f}" if baseline else "")
                  + f" {min(ratios):>6.3f}-{max(ratios):.3f}",
                  flush=True)


main()
