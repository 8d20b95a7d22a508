/* Two threads hand a turn back and forth through a flag; the one waiting polls it in a loop of
 * eight nops and a load, with no pause and no system call, as OpenBLAS's inner_thread waits for
 * its team (tests/real_bugs/openblas-small-matrix-threads). The main thread works ten times
 * longer per turn than the worker, so the worker spends most of its life polling.
 * Correct diagnosis: spinning, in wait_turn. Runs for about half a second of wall time, however
 * the machine schedules the two threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_int turn;
static atomic_int stop;
static volatile double sink;

__attribute__((noinline)) static void wait_turn(int me) {
    while (atomic_load_explicit(&turn, memory_order_acquire) != me &&
           !atomic_load_explicit(&stop, memory_order_relaxed))
        __asm__ volatile("nop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop\n\tnop");
}

__attribute__((noinline)) static void work(int n) {
    double s = 0;
    for (int i = 1; i < n; i++) s += 1.0 / i;
    sink = s;
}

static void *worker(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        wait_turn(1);
        work(2000);
        atomic_store_explicit(&turn, 0, memory_order_release);
    }
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    double end = now() + 0.5;
    long turns = 0;
    while (now() < end) {
        work(20000);
        atomic_store_explicit(&turn, 1, memory_order_release);
        wait_turn(0);
        turns++;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("%ld turns: %f\n", turns, sink);
    return 0;
}
