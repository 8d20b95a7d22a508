#!/bin/sh
# A cargo build's cargo process gets no finding from a handful of its CPU samples (too
# slow for tests/false_alarms_real.rs). Profiles `cargo build --release --offline`
# of tests/rust_programs (rayon, parking_lot and their dependencies from ~/.cargo/registry, no
# network) with a fresh target directory, and prints the findings of the cargo process (the
# launched profile: cargo's last image) with its CPU time and wall time; exits 1 if it has an
# allocator finding whose share rests on few samples of a process that used under 5% of the
# run's CPUs.
#
#   benches/false_alarms_cargo.sh [DIR]      (DIR default target/false-alarms-cargo; rebuilt)
#
# STALLSCOPE=path measures another binary (e.g. a build of main).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${1:-$ROOT/target/false-alarms-cargo}
if [ -z "${STALLSCOPE:-}" ]; then
    cargo build --release --quiet
    STALLSCOPE="${CARGO_TARGET_DIR:-$ROOT/target}/release/stallscope"
fi
rm -rf "$DIR"
mkdir -p "$DIR"
(cd tests/rust_programs &&
    "$STALLSCOPE" run -q -o "$DIR/cargo.prof" -- cargo build --release --offline --target-dir "$DIR/target" >/dev/null 2>&1)
"$STALLSCOPE" report --json "$DIR/cargo.prof" | python3 -c '
import json, sys
r = json.load(sys.stdin)
cpu = sum(t["cpu_ns"] for t in r["threads"])
wall = r["wall_ns"]
print("cargo: %.1f ms of CPU in a %.3f s build (%.2f%% of %d CPUs)" % (cpu / 1e6, wall / 1e9, 100 * cpu / (wall * r["ncpus"]), r["ncpus"]))
bad = 0
for f in r["findings"]:
    print("  %-6s %s [%s]%s" % (f["severity"].upper(), f["title"], f["id"], " (uncertain)" if f.get("uncertain") else ""))
    alloc = f["id"] in ("allocator-time", "small-allocations", "library-allocation-hotspot", "cross-thread-frees")
    if alloc and "possibly as little as 0.0%" in " ".join(f["evidence"]):
        bad += 1
if not r["findings"]:
    print("  no finding")
sys.exit(1 if bad else 0)
'
