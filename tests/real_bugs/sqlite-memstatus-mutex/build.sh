#!/usr/bin/env bash
# Builds the driver against Debian's libsqlite3 (libsqlite3-dev) into OUTDIR/driver.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")"
if [ ! -x "$out/driver" ] || [ driver.c -nt "$out/driver" ]; then
    "${CC:-cc}" -O2 -g -pthread driver.c -o "$out/driver" -lsqlite3
fi
