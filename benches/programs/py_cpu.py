"""A CPU-bound pure-Python program for benches/python_overhead.sh: about a second of
interpreter work in one thread, in nested calls (a few Python frames deep)."""


def inner(i):
    return (i * i) % 7


def middle(n):
    total = 0
    for i in range(n):
        total += inner(i)
    return total


def outer():
    return sum(middle(200_000) for _ in range(20))


print(outer())
