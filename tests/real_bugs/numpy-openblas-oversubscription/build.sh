#!/usr/bin/env bash
# Puts the script into OUTDIR beside a link to the python3 that has numpy (a pyenv shim would run
# the interpreter through bash scripts: the profile would be theirs too).
set -euo pipefail
out="$1"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
cp -f "$here"/*.py "$out/"
ln -sfn "$(python3 -c 'import sys; print(sys.executable)')" "$out/python3"
