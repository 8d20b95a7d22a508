"""A process pool of N workers (argv[1]), each multiplying matrices with numpy (OpenBLAS):
the pattern of numpy/numpy#654 and the threadpoolctl/scikit-learn documentation. Each worker's
OpenBLAS starts as many threads as the machine has CPUs unless OPENBLAS_NUM_THREADS says
otherwise, so N processes run N x CPUs threads on the CPUs."""
import multiprocessing
import sys

import numpy as np

TASKS = 16
SIZE = 320
ROUNDS = 6


def task(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((SIZE, SIZE))
    b = rng.standard_normal((SIZE, SIZE))
    total = 0.0
    for _ in range(ROUNDS):
        c = a @ b
        total += float(c[0, 0])
        a = c / np.linalg.norm(c)
    return total


def main():
    procs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(procs) as pool:
        results = pool.map(task, range(TASKS), chunksize=1)
    print(f"{len(results)} tasks on {procs} processes: {sum(results):.3f}")


if __name__ == "__main__":
    main()
