"""Many products of small matrices (128 x 128) with numpy: OpenBLAS splits each among its
threads (as many as CPUs unless OPENBLAS_NUM_THREADS says otherwise), whose hand-off costs more
than the product (OpenMathLib/OpenBLAS#731, #71). argv[1]: the count of products."""
import sys

import numpy as np

SIZE = 128


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rng = np.random.default_rng(731)
    a = rng.standard_normal((SIZE, SIZE))
    b = rng.standard_normal((SIZE, SIZE))
    total = 0.0
    for _ in range(rounds):
        c = a @ b
        total += float(c[0, 0])
    print(f"{rounds} products: {total:.3f}")


if __name__ == "__main__":
    main()
