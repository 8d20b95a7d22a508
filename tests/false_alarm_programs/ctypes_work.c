// A C function Python threads call through ctypes (which releases the GIL around the call).
long work(long n) {
    long s = 0;
    for (long i = 0; i < n; i++)
        s += (i * 2654435761L) >> 7;
    return s;
}
