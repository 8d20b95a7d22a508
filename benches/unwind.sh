#!/bin/bash
# Measures the unwinder candidates on a deep C++ stack through libstdc++ (see docs/STACKS.md).
# Needs g++; libunwind (apt-get install libunwind8) is measured when present.
set -euo pipefail
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
g++ -O2 -g "$(dirname "$0")/unwind_bench.cc" -o "$dir/unwind_bench" -ldl
"$dir/unwind_bench"
