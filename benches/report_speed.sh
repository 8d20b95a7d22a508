#!/bin/sh
# Speed and memory of `stallscope report` (docs/PERFORMANCE.md): on a run of many
# processes (a `cargo build` of a small project with 8 dependency crates, 25 crates in all:
# each rustc a profile) and on a long profile of one process (60 threads working for 40 s).
#
#   benches/report_speed.sh [DIR] [ROUNDS]      (needs cc, cargo; no network)
#
# DIR (default target/report-speed) keeps the profiles: made when missing, reused when present,
# so two builds of stallscope are compared on the same files. STALLSCOPE=path measures another
# binary (e.g. a build of main). Each report runs ROUNDS times (default 3); printed: the median
# wall time and CPU time (user + system: on a machine busy with other work, wall time is
# whatever share of a CPU was left), the largest peak RSS (/usr/bin/time -v), and the number of
# processes in the run.
# The project's crates come from ~/.cargo/registry (`cargo build --offline`): those stallscope's
# own build and tests/rust_programs download.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${1:-$ROOT/target/report-speed}
ROUNDS=${2:-3}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [ -z "${STALLSCOPE:-}" ]; then
    cargo build --release --quiet
    STALLSCOPE=${CARGO_TARGET_DIR:-$ROOT/target}/release/stallscope
fi
. "$ROOT/benches/common.sh"

# The run of many processes: a debug build of a project with dependency crates, from scratch.
if [ ! -f "$DIR/build.prof" ]; then
    P=$DIR/project
    rm -rf "$P"
    mkdir -p "$P/src"
    cat > "$P/Cargo.toml" <<'TOML'
[package]
name = "report-speed-build"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
anyhow = "1"
crc32fast = "1"
indexmap = "2"
memchr = "2"
parking_lot = "0.12"
rayon = "1"
serde_json = "1"
shell-words = "1"

[workspace]
TOML
    cat > "$P/src/main.rs" <<'RS'
use rayon::prelude::*;

fn main() -> anyhow::Result<()> {
    let n: u64 = std::env::args().nth(1).map_or(Ok(1000), |a| a.parse())?;
    let sum: u64 = (0..n).into_par_iter().map(|i| i * i).sum();
    let lock = parking_lot::Mutex::new(indexmap::IndexMap::new());
    lock.lock().insert("words", shell_words::split("a b c")?.len());
    let crc = crc32fast::hash(&sum.to_le_bytes());
    let _ = memchr::memchr(b'a', b"abc");
    println!("{}", serde_json::json!({ "sum": sum, "crc": crc }));
    Ok(())
}
RS
    (cd "$P" && CARGO_TARGET_DIR="$P/target" cargo generate-lockfile --offline --quiet)
    echo "profiling: cargo build of $P (from scratch)..." >&2
    (cd "$P" && CARGO_TARGET_DIR="$P/target" "$STALLSCOPE" run -q -o "$DIR/build.prof" -- \
        cargo build --offline --quiet)
fi

# The long profile of one process: 60 threads for 40 s.
if [ ! -f "$DIR/threads.prof" ]; then
    cc -O2 -g -pthread -o "$DIR/sixty_threads" "$ROOT/benches/programs/sixty_threads.c"
    echo "profiling: 60 threads for 40 s..." >&2
    "$STALLSCOPE" run -q -o "$DIR/threads.prof" -- "$DIR/sixty_threads" 40 >/dev/null
fi

processes=$("$STALLSCOPE" report --json "$DIR/build.prof" |
    python3 -c 'import json,sys; print(len(json.load(sys.stdin)["run"]["processes"]))')
echo "stallscope: $STALLSCOPE"
echo "profiles: $DIR (the build: $processes processes)"
for case in build threads; do
    walls=""
    cpus=""
    rss=0
    i=0
    while [ "$i" -lt "$ROUNDS" ]; do
        /usr/bin/time -v -o "$DIR/time.txt" "$STALLSCOPE" report "$DIR/$case.prof" >/dev/null
        wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
            for (k = 1; k <= n; k++) s = s * 60 + p[k]; print s }' "$DIR/time.txt")
        cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$DIR/time.txt")
        kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$DIR/time.txt")
        walls="$walls $wall"
        cpus="$cpus $cpu"
        [ "$kb" -gt "$rss" ] && rss=$kb
        i=$((i + 1))
    done
    printf '%-8s report: wall %6.2f s (%s)   CPU %6.2f s   peak RSS %4d MB\n' "$case" \
        "$(echo "$walls" | bench_median)" "$(echo $walls | tr ' ' ',')" \
        "$(echo "$cpus" | bench_median)" "$((rss / 1024))"
done
