/* Frees by another thread than the allocating one. Mode "handoff": a producer allocates small
 * blocks and passes them through a ring to a consumer that frees them. Mode "own": each of two
 * threads frees what it allocated. Prints the mode and the number of blocks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 400000
#define RING 1024

static void *ring[RING];
static unsigned head, tail; /* head: written by the producer; tail: by the consumer */

static void *producer(void *arg) {
    for (unsigned i = 0; i < BLOCKS; i++) {
        void *p = malloc(16 + i % 48);
        while (__atomic_load_n(&head, __ATOMIC_ACQUIRE) - __atomic_load_n(&tail, __ATOMIC_ACQUIRE) == RING) {
        }
        ring[head % RING] = p;
        __atomic_store_n(&head, head + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *consumer(void *arg) {
    for (unsigned i = 0; i < BLOCKS; i++) {
        while (__atomic_load_n(&tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&head, __ATOMIC_ACQUIRE)) {
        }
        free(ring[tail % RING]);
        __atomic_store_n(&tail, tail + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void *own(void *arg) {
    for (unsigned i = 0; i < BLOCKS; i++) {
        void *p = malloc(16 + i % 48);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int handoff = argc > 1 && strcmp(argv[1], "handoff") == 0;
    pthread_t a, b;
    pthread_create(&a, NULL, handoff ? producer : own, NULL);
    pthread_create(&b, NULL, handoff ? consumer : own, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%s %d\n", handoff ? "handoff" : "own", BLOCKS);
    return 0;
}
