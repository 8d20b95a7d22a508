#!/usr/bin/env bash
# Builds before and after (release, with line tables) into OUTDIR; cargo makes it idempotent.
set -euo pipefail
out="$(realpath -m "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
cargo build --quiet --release --locked --manifest-path "$here/Cargo.toml" --target-dir "$out/target"
cp -f "$out/target/release/before" "$out/target/release/after" "$out/"
