#!/usr/bin/env bash
# What a paused process, and a process after `stallscope attach` detached, cost the program: a
# malloc/free/lock/unlock loop (benches/programs/attach_after.c) timed unprofiled, under
# `stallscope run --paused` never attached, under `run --paused` after one 0.3 s window (the loop
# starts after the detach), started plainly with the interposer loaded by attach (ptrace) and one
# 0.3 s window, and under plain `stallscope run`, interleaved, ROUNDS rounds. Prints
# each run's ns per iteration; compare the medians. A benchmark, not a test: it asserts nothing.
#
# Usage: benches/attach_after.sh [ROUNDS]   (the stallscope of target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
S=$PWD/target/release/stallscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/attach_after" benches/programs/attach_after.c
B=$work/attach_after
one() {
    local in=$work/in out=$work/out
    rm -f "$in" "$out"
    mkfifo "$in"
    case $1 in
        plain | injected) "$B" <"$in" >"$out" & ;;
        run) "$S" run -q -o "$work/run.prof" -- "$B" <"$in" >"$out" & ;;
        paused | detached) "$S" run -q --paused -- "$B" <"$in" >"$out" & ;;
    esac
    exec 7>"$in"
    until grep -q ready "$out" 2>/dev/null; do sleep 0.05; done
    if [ "$1" = detached ] || [ "$1" = injected ]; then
        "$S" attach -q --duration 0.3 -o "$work/window.prof" "$(pgrep -n -f "^$B")"
    fi
    echo go >&7
    exec 7>&-
    wait
    echo "$1 $(tail -1 "$out")"
    rm -f "$work/run.prof" "$work/window.prof"
}
for _ in $(seq "$rounds"); do
    for m in plain paused detached injected run; do one $m; done
done
