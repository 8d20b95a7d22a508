// Four threads each build and free many tiny nodes: small allocations dominate and the allocator
// takes a large share of the threads' time.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct token {
    struct token *next;
    int value;
};

static long __attribute__((noinline)) build_tokens(int n) {
    struct token *head = NULL;
    for (int i = 0; i < n; i++) {
        struct token *t = malloc(sizeof *t);
        t->value = i;
        t->next = head;
        head = t;
    }
    long sum = 0;
    while (head) {
        struct token *next = head->next;
        sum += head->value;
        free(head);
        head = next;
    }
    return sum;
}

static void *worker(void *arg) {
    long total = 0;
    for (int round = 0; round < 1000; round++)
        total += build_tokens(1000);
    *(long *)arg = total;
    return NULL;
}

int main(void) {
    pthread_t threads[4];
    long totals[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, worker, &totals[i]);
    long sum = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        sum += totals[i];
    }
    printf("%ld\n", sum);
    return 0;
}
