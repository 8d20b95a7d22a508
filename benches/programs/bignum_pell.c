/* Single-threaded, allocation-bound workload shaped like cfrac (a number-theory program on a
 * bignum library that allocates every intermediate result): solves Pell's equation
 * x^2 - d*y^2 = 1 for every non-square d up to a limit by the continued fraction of sqrt(d). The
 * convergents are bignums, each operation returns a new heap value and the operands that are no
 * longer needed are freed at once, so the program is a stream of short-lived blocks of 8 to a few
 * hundred bytes.
 *   bignum_pell [ROUNDS=100] [LIMIT=1500]
 * Solves them all ROUNDS times; prints the number of solutions and a checksum of their limbs
 * (deterministic). Built with -DHOOK_AB it has no main: benches/programs/hook_ab.c calls
 * pell_solve_all through allocator functions it switches between (benches/hook_inprocess.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HOOK_AB
#include "hook_ab.h"
#endif

struct big {
    uint32_t n;    /* limbs in use, at least 1 */
    uint32_t d[]; /* little-endian, base 2^32 */
};

static struct big *big_alloc(uint32_t n) {
    struct big *b = malloc(sizeof *b + (size_t)n * sizeof(uint32_t));
    if (!b) abort();
    b->n = n;
    return b;
}

static struct big *big_trim(struct big *b) {
    while (b->n > 1 && b->d[b->n - 1] == 0) b->n--;
    return b;
}

static struct big *big_from(uint64_t v) {
    struct big *b = big_alloc(2);
    b->d[0] = (uint32_t)v;
    b->d[1] = (uint32_t)(v >> 32);
    return big_trim(b);
}

static struct big *big_add(const struct big *a, const struct big *b) {
    if (a->n < b->n) {
        const struct big *t = a;
        a = b;
        b = t;
    }
    struct big *r = big_alloc(a->n + 1);
    uint64_t carry = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        carry += (uint64_t)a->d[i] + (i < b->n ? b->d[i] : 0);
        r->d[i] = (uint32_t)carry;
        carry >>= 32;
    }
    r->d[a->n] = (uint32_t)carry;
    return big_trim(r);
}

/* a - b, with a >= b. */
static struct big *big_sub(const struct big *a, const struct big *b) {
    struct big *r = big_alloc(a->n);
    int64_t borrow = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        int64_t v = (int64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        borrow = v < 0;
        r->d[i] = (uint32_t)(v + (borrow << 32));
    }
    return big_trim(r);
}

static struct big *big_mul_small(const struct big *a, uint32_t m) {
    struct big *r = big_alloc(a->n + 1);
    uint64_t carry = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        carry += (uint64_t)a->d[i] * m;
        r->d[i] = (uint32_t)carry;
        carry >>= 32;
    }
    r->d[a->n] = (uint32_t)carry;
    return big_trim(r);
}

static struct big *big_mul(const struct big *a, const struct big *b) {
    struct big *r = big_alloc(a->n + b->n);
    memset(r->d, 0, (size_t)r->n * sizeof(uint32_t));
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t carry = 0;
        for (uint32_t j = 0; j < b->n; j++) {
            carry += (uint64_t)a->d[i] * b->d[j] + r->d[i + j];
            r->d[i + j] = (uint32_t)carry;
            carry >>= 32;
        }
        r->d[i + b->n] = (uint32_t)carry;
    }
    return big_trim(r);
}

static int big_is_one(const struct big *a) { return a->n == 1 && a->d[0] == 1; }

/* p_k = a*p_{k-1} + p_{k-2}: returns the new value; the caller frees p_{k-2}. */
static struct big *next_convergent(uint32_t a, const struct big *prev, const struct big *prev2) {
    struct big *t = big_mul_small(prev, a);
    struct big *r = big_add(t, prev2);
    free(t);
    return r;
}

/* Whether x^2 - d*y^2 == 1. */
static int solves(const struct big *x, const struct big *y, uint32_t d) {
    struct big *xx = big_mul(x, x), *yy = big_mul(y, y), *dyy = big_mul_small(yy, d);
    int ok = 0;
    if (xx->n >= dyy->n) {
        struct big *diff = big_sub(xx, dyy);
        ok = big_is_one(diff);
        free(diff);
    }
    free(xx);
    free(yy);
    free(dyy);
    return ok;
}

/* Solves x^2 - d*y^2 = 1 for every non-square d in 2..limit once; counts the solutions into
 * *solutions and returns a checksum of their limbs folded into `check`. */
static uint64_t pell_solve_all(uint32_t limit, uint64_t *solutions, uint64_t check) {
    for (uint32_t d = 2; d <= limit; d++) {
        uint32_t a0 = 0;
        while ((a0 + 1) * (a0 + 1) <= d) a0++;
        if (a0 * a0 == d) continue;
        /* Continued fraction of sqrt(d): m, q and a stay small. */
        uint64_t m = 0, q = 1, a = a0;
        struct big *p2 = big_from(1), *p1 = big_from(a0); /* p_{-1}, p_0 */
        struct big *q2 = big_from(0), *q1 = big_from(1);
        while (!solves(p1, q1, d)) {
            m = q * a - m;
            q = (d - m * m) / q;
            a = (a0 + m) / q;
            struct big *p = next_convergent((uint32_t)a, p1, p2), *qq = next_convergent((uint32_t)a, q1, q2);
            free(p2);
            free(q2);
            p2 = p1;
            q2 = q1;
            p1 = p;
            q1 = qq;
        }
        (*solutions)++;
        for (uint32_t i = 0; i < p1->n; i++) check = check * 1000003 + p1->d[i];
        free(p1);
        free(p2);
        free(q1);
        free(q2);
    }
    return check;
}

#ifdef HOOK_AB
uint64_t hook_ab_pell(uint32_t limit) {
    uint64_t solutions = 0;
    return pell_solve_all(limit, &solutions, 0);
}
#else
int main(int argc, char **argv) {
    uint32_t rounds = argc > 1 ? (uint32_t)atol(argv[1]) : 100;
    uint32_t limit = argc > 2 ? (uint32_t)atol(argv[2]) : 1500;
    uint64_t solutions = 0, check = 0;
    for (uint32_t round = 0; round < rounds; round++) check = pell_solve_all(limit, &solutions, check);
    printf("%llu solutions, checksum %016llx\n", (unsigned long long)solutions, (unsigned long long)check);
    return 0;
}
#endif
