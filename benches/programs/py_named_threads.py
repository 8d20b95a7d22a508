"""A CPU-bound Python program with named threads for benches/python_overhead.py
(BENCH_PROGRAM=benches/programs/py_named_threads.py): four `threading.Thread(name=...)` threads and
a ThreadPoolExecutor of four workers, pure-Python loops on the GIL, whose names stallscope reads
from the threading module while they run (docs/STACKS.md, "Thread names")."""
import threading
from concurrent.futures import ThreadPoolExecutor


def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


threads = [threading.Thread(target=spin, args=(1_500_000,), name=f"fetcher-{i}") for i in range(4)]
for t in threads:
    t.start()
with ThreadPoolExecutor(max_workers=4, thread_name_prefix="pool") as pool:
    list(pool.map(spin, [300_000] * 16))
for t in threads:
    t.join()
