#!/usr/bin/env python3
"""Interleaved A/B timing of whole shell commands: each round runs every command once (the one
that starts rotates from round to round), and the table gives each command's median wall time and
the median of its per-round ratios to the first command, with a 95% confidence interval of that
median (order statistics of the rounds, distribution-free). For figures such as a supervised
start's fixed cost (docs/PERFORMANCE.md, "A start's fixed cost"), where the host moves more
from minute to minute than the difference measured.

Usage: benches/interleave.py ROUNDS NAME=COMMAND [NAME=COMMAND ...]
  each COMMAND runs through /bin/sh, its output discarded; the first is the baseline.
  e.g. benches/interleave.py 100 'plain=/bin/true' 'run=rm -rf /tmp/p.prof*; stallscope run -q -o /tmp/p.prof -- /bin/true'
This is a benchmark, not a test: it asserts nothing."""
import math
import statistics
import subprocess
import sys
import time


def median_interval(values):
    """The order statistics around the median that hold it with 95% confidence."""
    v = sorted(values)
    n = len(v)
    k = max(0, int(n / 2 - 1.96 * math.sqrt(n) / 2))
    return v[k], v[n - 1 - k]


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or any("=" not in a for a in sys.argv[2:]):
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    modes = [a.split("=", 1) for a in sys.argv[2:]]
    times = {name: [] for name, _ in modes}
    for r in range(rounds):
        start = r % len(modes)
        for name, command in modes[start:] + modes[:start]:
            t = time.perf_counter()
            subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    base = modes[0][0]
    for name, _ in modes:
        ratios = [a / b for a, b in zip(times[name], times[base])]
        lo, hi = median_interval(ratios)
        print(f"{name:12s} median {statistics.median(times[name]) * 1000:9.2f} ms   "
              f"ratio {statistics.median(ratios):.3f} (CI {lo:.3f}-{hi:.3f})   "
              f"min {min(times[name]) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
