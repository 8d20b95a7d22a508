# Two threads run Python code (they take turns on the GIL) while two others hash a large buffer
# with hashlib (which releases the GIL): the hashing threads keep the CPUs busy.
import hashlib
import sys
import threading

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
buf = b"x" * (4 << 20)


def python_loop():
    s = 0
    for i in range(rounds * 40000):
        s += i * i % 7
    return s


def hashing():
    h = hashlib.sha256()
    for _ in range(rounds):
        h.update(buf)
    return h.hexdigest()


threads = [threading.Thread(target=python_loop) for _ in range(2)]
threads += [threading.Thread(target=hashing) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done")
