#!/usr/bin/env python3
"""The CPU time a profiled process start costs: a program that does nothing (/bin/true by default)
run unprofiled and with each interposer given (LD_PRELOAD, its profile written into a scratch
directory: the interposer's own start and exit, not `stallscope run`'s), interleaved, its CPU
time (user + system, its threads included) taken from wait4. What every process of a build or a
shell script pays (docs/PERFORMANCE.md, "A start's fixed cost"); and its minor page faults (the
pages it touched first), which the interposer's own tables add to (`cc -O2 -g -o /tmp/many_sites
benches/programs/many_sites.c`, then `--program /tmp/many_sites --args 2048`: 2048 new stacks,
about a quarter of a page each).

Usage: benches/start_cpu.py [--rounds N] [--program PATH] [--args 'A B ...'] LIB[|VAR=VALUE...] ...
  each LIB is an interposer (a built libstallscope-*.so), optionally with environment settings
  separated by '|'; '-' is the unprofiled run (always run first in the table)."""
import argparse
import os
import shutil
import statistics
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=300)
ap.add_argument("--program", default="/bin/true")
ap.add_argument("--args", default="", help="the program's arguments, split at spaces")
ap.add_argument("libs", nargs="+")
a = ap.parse_args()
modes = ["-"] + [m for m in a.libs if m != "-"]
scratch = tempfile.mkdtemp(prefix="stallscope-start-")
res = {m: [] for m in modes}
faults = {m: [] for m in modes}
argv = [a.program] + a.args.split()
try:
    for r in range(a.rounds):
        for m in modes[r % len(modes):] + modes[: r % len(modes)]:
            env = dict(os.environ, STALLSCOPE_DIR=scratch)
            parts = m.split("|")
            if parts[0] != "-":
                env["LD_PRELOAD"] = parts[0]
            for kv in parts[1:]:
                k, v = kv.split("=", 1)
                env[k] = v
            pid = os.fork()
            if pid == 0:
                try:
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.execve(a.program, argv, env)
                finally:
                    os._exit(127)
            _, _, ru = os.wait4(pid, 0)
            res[m].append((ru.ru_utime + ru.ru_stime) * 1e6)
            faults[m].append(ru.ru_minflt)
        if r % 50 == 49:
            shutil.rmtree(scratch)
            os.mkdir(scratch)
finally:
    shutil.rmtree(scratch, ignore_errors=True)
base = statistics.median(res["-"])
base_faults = statistics.median(faults["-"])
print(f"{a.rounds} interleaved rounds of {' '.join(argv)}; CPU per process, median (quartiles); minor page faults, median")
for m in modes:
    v = sorted(res[m])
    n = len(v)
    med = statistics.median(v)
    f = statistics.median(faults[m])
    print(f"  {m[-70:]:70s} {med:7.0f} us ({v[n // 4]:.0f}-{v[3 * n // 4]:.0f})  +{med - base:6.0f} us"
          f"  {f:6.0f} faults  +{f - base_faults:5.0f}")
