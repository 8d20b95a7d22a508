#!/usr/bin/env python3
"""Rewrites a profile's MODULE records so that no machine can symbolize it: each module's path
becomes /nonexistent/stallscope-golden/<file name> and its build id is dropped (so no debug file
is looked up by build id). Frames then print as module+offset everywhere, and the golden exports
of sample.prof are the same on every machine. Usage: anonymize.py IN.prof OUT.prof"""
import os, struct, sys, zlib

data = open(sys.argv[1], "rb").read()
out = bytearray(data[:24])
pos = 24
while pos < len(data):
    rtype, size, _crc, reserved = struct.unpack_from("<IIII", data, pos)
    payload = data[pos + 16 : pos + 16 + size]
    pos += 16 + size + (-size % 8)
    if rtype == 6:
        bias, lo, hi, seen, idlen, plen = struct.unpack_from("<QQQQII", payload, 0)
        path = payload[40 + idlen : 40 + idlen + plen].rstrip(b"\0")
        name = os.path.basename(path.decode()) or "unknown"
        newpath = ("/nonexistent/stallscope-golden/" + name).encode()
        payload = struct.pack("<QQQQII", bias, lo, hi, seen, 0, len(newpath)) + newpath
    head = struct.pack("<II", rtype, len(payload))
    crc = zlib.crc32(head + payload) & 0xFFFFFFFF
    out += head + struct.pack("<II", crc, reserved) + payload
    out += b"\0" * (-len(payload) % 8)
open(sys.argv[2], "wb").write(out)
