/* Frees by another thread than the allocating one. Mode "handoff": a producer allocates small
 * blocks and passes them through a ring to a consumer that frees them. Mode "own": each of two
 * threads frees what it allocated. Mode "short": 20,000 short threads, four at a time, each
 * freeing the few blocks it allocated (glibc hands each new thread the arena of an ended one).
 * Prints the mode and the number of blocks. */
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

#define SHORT_THREADS 20000
#define SHORT_AT_ONCE 4
#define SHORT_BLOCKS (BLOCKS / SHORT_THREADS)

static void *short_own(void *arg) {
    void *blocks[SHORT_BLOCKS];
    for (unsigned i = 0; i < SHORT_BLOCKS; i++) {
        blocks[i] = malloc(16 + i * 8);
        __asm__ volatile("" : : "r"(blocks[i]) : "memory");
    }
    for (unsigned i = 0; i < SHORT_BLOCKS; i++) free(blocks[i]);
    return NULL;
}

static int short_threads(void) {
    pthread_t t[SHORT_AT_ONCE];
    for (unsigned done = 0; done < SHORT_THREADS; done += SHORT_AT_ONCE) {
        for (unsigned i = 0; i < SHORT_AT_ONCE; i++)
            if (pthread_create(&t[i], NULL, short_own, NULL) != 0) return 10;
        for (unsigned i = 0; i < SHORT_AT_ONCE; i++) pthread_join(t[i], NULL);
    }
    printf("short %d\n", SHORT_THREADS * SHORT_BLOCKS);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "short") == 0) return short_threads();
    int handoff = argc > 1 && strcmp(argv[1], "handoff") == 0;
    pthread_t a, b;
    pthread_create(&a, NULL, handoff ? producer : own, NULL);
    pthread_create(&b, NULL, handoff ? consumer : own, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%s %d\n", handoff ? "handoff" : "own", BLOCKS);
    return 0;
}
