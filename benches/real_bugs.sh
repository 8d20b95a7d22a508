#!/usr/bin/env bash
# The corpus of real scaling bugs (tests/real_bugs/*/case.json, docs/CASES.md), measured: builds
# every case (or those named), then, in interleaved rounds (each round runs every command once,
# the one that starts rotating), times each case's before and after with 1 and 2 threads without
# the profiler, and its before and after (2 threads) under `stallscope run`. Prints one table:
# the medians of the rounds, the after's speedup over the before (2 threads), each side's gain
# from 1 to 2 threads, stallscope's top finding on each side, and what `stallscope run` costs
# (its wall time over the plain run's, 2 threads). A case whose `needs` are missing is listed
# as skipped with the reason.
#
# Usage: benches/real_bugs.sh [ID...]
#   ROUNDS=N   rounds (default 5)
#   RT=1       run every timed command under `chrt -f 1` (real-time priority): on a machine that
#              other jobs keep busy the threads of a run otherwise seldom run at the same time,
#              and a lock then costs nothing; say so beside figures measured with it.
# This is a benchmark, not a test: it asserts nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$root" && cargo build --release --quiet)
export STALLSCOPE_BIN="$root/target/release/stallscope" REAL_BUGS_ROOT="$root"
exec python3 - "$@" <<'PY'
import json, os, shutil, statistics, subprocess, sys, tempfile, time

root = os.environ["REAL_BUGS_ROOT"]
stallscope = os.environ["STALLSCOPE_BIN"]
rounds = int(os.environ.get("ROUNDS", "5"))
prefix = ["chrt", "-f", "1"] if os.environ.get("RT") == "1" else []
corpus = os.path.join(root, "tests", "real_bugs")
wanted = sys.argv[1:]


def missing(needs):
    """What of `needs` is not installed, in words (None: all is)."""
    for need in needs:
        if need.startswith("apt:"):
            pkg = need[4:]
            out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
            if "install ok installed" not in out.stdout:
                return f"the Debian package {pkg} is not installed (apt-get install {pkg})"
        elif need.startswith("pip:"):
            name = need[4:].split("==")[0]
            if subprocess.run(["python3", "-m", "pip", "show", "-q", name], capture_output=True).returncode:
                return f"the Python package {need[4:]} is not installed (pip install {need[4:]})"
        elif shutil.which(need) is None:
            return f"`{need}` is not on PATH"
    return None


def command(case, side, threads, out):
    argv = [a.replace("{build}", out) for a in case[side]["argv"]]
    env = dict(os.environ)
    env.update(case[side].get("env", {}))
    t = case.get("threads", {})
    if "arg" in t:
        argv[t["arg"]] = str(threads)
    if "env" in t:
        env[t["env"]] = str(threads)
    return argv, env


def top_finding(report):
    """The first high or medium finding, looking through parallel-efficiency (as the tests do)."""
    found = [f for f in report.get("findings", []) if f.get("severity") in ("high", "medium")]
    for f in found:
        if f["id"] != "parallel-efficiency":
            return f"{f['severity'].upper()} {f['id']}: {f['title'][:90]}"
    if found:
        f = found[0]
        return f"{f['severity'].upper()} {f['id']}: {f['title'][:90]}"
    return "none (high or medium)"


cases, skipped = [], []
for cid in sorted(os.listdir(corpus)):
    path = os.path.join(corpus, cid, "case.json")
    if not os.path.isfile(path) or (wanted and cid not in wanted):
        continue
    case = json.load(open(path))
    why = missing(case.get("needs", []))
    if why:
        skipped.append((cid, why))
        continue
    out = os.path.join(root, "target", "real_bugs", cid)
    if case.get("build"):
        print(f"building {cid}", file=sys.stderr)
        subprocess.run(["bash", os.path.join(corpus, cid, case["build"]), out], cwd=os.path.join(corpus, cid), check=True)
    cases.append((cid, case, out))

work = tempfile.mkdtemp(prefix="real-bugs-")
times = {}
reports = {}
for r in range(rounds):
    print(f"round {r + 1} of {rounds}", file=sys.stderr)
    jobs = []
    for cid, case, out in cases:
        for side in ("before", "after"):
            for n in (1, 2):
                jobs.append((cid, case, out, side, n, False))
            jobs.append((cid, case, out, side, 2, True))
    start = r % len(jobs) if jobs else 0
    for cid, case, out, side, n, profiled in jobs[start:] + jobs[:start]:
        argv, env = command(case, side, n, out)
        if profiled:
            prof = os.path.join(work, f"{cid}-{side}.prof")
            for p in (prof, prof + ".children"):
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
            argv = [stallscope, "run", "-q", "-o", prof, "--"] + argv
        t = time.perf_counter()
        subprocess.run(prefix + argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
        times.setdefault((cid, side, n, profiled), []).append(time.perf_counter() - t)
        if profiled and r == rounds - 1:
            rep = subprocess.run([stallscope, "report", "--json", prof], capture_output=True, text=True)
            try:
                reports[(cid, side)] = json.loads(rep.stdout)
            except json.JSONDecodeError:
                reports[(cid, side)] = {}

med = lambda k: statistics.median(times[k])
print(f"\nreal bugs: medians of {rounds} interleaved rounds{' (chrt -f 1)' if prefix else ''}; "
      "speedup = before / after (2 threads); gain = 1-thread / 2-thread wall time; overhead = stallscope run / plain (2 threads)")
head = f"{'case':<28} {'before 1t':>9} {'before 2t':>9} {'after 1t':>9} {'after 2t':>9} {'speedup':>8} {'gain b':>7} {'gain a':>7} {'ovh b':>6} {'ovh a':>6}"
print(head)
for cid, case, out in cases:
    b1, b2, a1, a2 = med((cid, "before", 1, False)), med((cid, "before", 2, False)), med((cid, "after", 1, False)), med((cid, "after", 2, False))
    ob, oa = med((cid, "before", 2, True)) / b2, med((cid, "after", 2, True)) / a2
    print(f"{cid:<28} {b1:>8.3f}s {b2:>8.3f}s {a1:>8.3f}s {a2:>8.3f}s {b2 / a2:>7.2f}x {b1 / b2:>6.2f}x {a1 / a2:>6.2f}x {ob:>5.2f}x {oa:>5.2f}x")
print()
for cid, case, out in cases:
    print(f"{cid}\n  before: {top_finding(reports.get((cid, 'before'), {}))}\n  after:  {top_finding(reports.get((cid, 'after'), {}))}")
for cid, why in skipped:
    print(f"{cid}: skipped: {why}")
shutil.rmtree(work, ignore_errors=True)
PY
