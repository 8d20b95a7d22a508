#!/usr/bin/env bash
# Writes the input (2 MB of text, smaller than one xz block at preset 3) into OUTDIR.
set -euo pipefail
out="$1"
mkdir -p "$out"
[ -s "$out/input.txt" ] || python3 "$(dirname "$0")/gen_input.py" "$out/input.txt" 2000000
