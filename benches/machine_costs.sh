#!/usr/bin/env bash
# What this machine charges for the parts of a profiled start (benches/programs/machine_costs.c):
# cpuid, rdtsc, a system call, a page's first touch, a futex round trip, fork and vfork, and a
# directory and a file made and removed, in each directory given (default: the temporary directory
# and /dev/shm). A machine whose deletions wait for the disk (ext4 mounted `discard`) or whose
# cpuid is a VM exit makes a start dearer than the same binaries elsewhere.
#
# Usage: benches/machine_costs.sh [DIR...]
# This is a benchmark, not a test: it asserts nothing.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/stallscope-costs.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/machine_costs" "$root/benches/programs/machine_costs.c"
[ $# -gt 0 ] || set -- "${TMPDIR:-/tmp}" /dev/shm
first=1
for dir in "$@"; do
    if [ "$first" = 1 ]; then
        "$work/machine_costs" "$dir"
        first=0
    else
        "$work/machine_costs" "$dir" | tail -1
    fi
done
echo "file systems:"; df -T "$@" | tail -n +2
