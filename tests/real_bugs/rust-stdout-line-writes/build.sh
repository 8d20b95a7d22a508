#!/usr/bin/env bash
# Builds the driver into OUTDIR/lines (before and after are its two arguments).
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
cargo build --quiet --release --locked --manifest-path "$here/Cargo.toml" --target-dir "$out/target"
cp -f "$out/target/release/lines" "$out/lines"
