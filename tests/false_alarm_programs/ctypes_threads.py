# Two threads call a C function through ctypes in a loop: ctypes releases the GIL around each
# call and takes it back after, so the threads take turns on CPython's GIL.
import ctypes
import sys
import threading

lib = ctypes.CDLL(sys.argv[1])
lib.work.argtypes = [ctypes.c_long]
lib.work.restype = ctypes.c_long
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 400000
work = int(sys.argv[3]) if len(sys.argv) > 3 else 20


def run():
    s = 0
    for i in range(calls):
        s += lib.work(work)
    return s


threads = [threading.Thread(target=run) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done")
