#!/usr/bin/env bash
# Builds the interposer of another revision exactly as `stallscope run` embeds it (build.rs, the
# cc crate's flags included: -ffunction-sections -fdata-sections change the layout, and an A/B of
# two builds compiled differently measures that rather than the change; docs/PERFORMANCE.md,
# "How it is measured"), for the --baseline-lib of overhead.sh and faithfulness.sh.
# Usage: benches/interposer_at.sh REVISION OUT.so
# It checks REVISION out in a temporary worktree and runs `cargo build --release` there (a target
# directory of its own under ${TMPDIR:-/tmp}, kept between calls: its dependencies build once).
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,8p' "$0"; exit 2; }
rev="$1"
out="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
root="$(cd "$(dirname "$0")/.." && pwd)"
tree="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-rev.XXXXXX")"
trap 'git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"' EXIT
git -C "$root" worktree add --detach --force "$tree" "$rev" >/dev/null
target="${TMPDIR:-/tmp}/stallscope-rev-target"
(cd "$tree" && CARGO_TARGET_DIR="$target" cargo build --release --quiet)
lib="$(ls -t "$target"/release/build/stallscope-*/out/libstallscope.so | head -1)"
cp "$lib" "$out"
echo "$out: the interposer of $(git -C "$root" rev-parse --short "$rev")"
