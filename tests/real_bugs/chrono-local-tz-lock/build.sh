#!/usr/bin/env bash
# Builds the driver with chrono before the fix (OUTDIR/before) and with the fix (OUTDIR/after).
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
for v in before after; do
    cargo build --quiet --release --locked --manifest-path "$here/$v/Cargo.toml" --target-dir "$out/target-$v"
    cp -f "$out/target-$v/release/chrono_local" "$out/$v"
done
