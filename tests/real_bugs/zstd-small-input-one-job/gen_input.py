"""Writes a deterministic text of SIZE bytes to PATH: lines of words drawn from a fixed vocabulary,
compressible as logs or source text are."""
import random
import sys

path, size = sys.argv[1], int(sys.argv[2])
rng = random.Random(53)
letters = "abcdefghijklmnopqrstuvwxyz"
words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 9))) for _ in range(5000)]
out, n = [], 0
while n < size:
    line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
    out.append(line)
    n += len(line)
with open(path, "w") as f:
    f.write("".join(out)[:size])
