/* Clean case: a single-threaded program that computes and allocates a moderate amount.
 *
 * Demonstrates: nothing to parallelize by mistake. One thread builds a linked list of nodes
 * (3,000 allocations per round), sums it and frees it, then computes.
 * Correct diagnosis: one thread, compute ~99% of its life, the allocator ~1%; NO
 * finding at medium or high: no parallel-efficiency, serial-section or imbalance finding for a
 * program that never had a second thread ("serial section" needs threads that exist).
 * Usage: clean_single [ignored=1] [rounds=150] */
#include <stdio.h>
#include <stdlib.h>
#include "truth.h"

struct node {
    struct node *next;
    double value[6];
};

__attribute__((noinline)) static double round_trip(long r) {
    struct node *list = NULL;
    for (long i = 0; i < 3000; i++) {
        struct node *n = malloc(sizeof *n);
        n->value[0] = (double)(i ^ r);
        n->next = list;
        list = n;
    }
    double sum = 0;
    while (list) {
        struct node *n = list;
        list = n->next;
        sum += n->value[0];
        free(n);
    }
    for (int k = 0; k < 3000000; k++) sum = sum * 0.9999999 + 1e-7;
    return sum;
}

int main(int argc, char **argv) {
    truth_start();
    long rounds = arg_or(argc, argv, 2, 150);
    double total = 0;
    for (long r = 0; r < rounds; r++) total += round_trip(r);
    printf("%f\n", total);
    truth_end("main");
    return 0;
}
