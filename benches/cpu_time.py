#!/usr/bin/env python3
"""Runs a command and writes the CPU time it used, with its waited-for descendants (the profiler's
supervisor and the program under it), as "user system" in seconds with microseconds, taken from
wait4: /usr/bin/time prints them to the hundredth of a second, too coarse for programs of 0.03 s.

Usage: benches/cpu_time.py OUTFILE CMD [ARG...]   (exits with the command's status)"""
import os
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
# posix_spawn (glibc's shares the address space until the exec): a fork would copy this
# interpreter's page tables and charge their teardown at the exec to the command.
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f}\n")
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)
