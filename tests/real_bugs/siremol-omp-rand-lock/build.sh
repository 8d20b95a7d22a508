#!/usr/bin/env bash
# Builds pi.cpp with g++ and OpenMP (libgomp) into OUTDIR/pi.
set -euo pipefail
out="${1:?usage: build.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")"
if [ ! -x "$out/pi" ] || [ pi.cpp -nt "$out/pi" ]; then
    "${CXX:-g++}" -std=c++17 -O2 -g -fopenmp pi.cpp -o "$out/pi"
fi
