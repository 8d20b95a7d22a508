#!/usr/bin/env bash
# Writes the input (6 MiB of text, smaller than one zstd job at level 12) into OUTDIR.
set -euo pipefail
out="$1"
mkdir -p "$out"
[ -s "$out/input.txt" ] || python3 "$(dirname "$0")/gen_input.py" "$out/input.txt" 6291456
