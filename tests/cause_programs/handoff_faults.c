/* Two threads that hand a turn back and forth on a condition variable (futex calls: system time)
 * and touch a fresh page every few turns (a few page faults in every stretch of the run).
 * Correct diagnosis: the system time is the hand-offs' futex calls, not page faults: no
 * page-faults finding, kernel memory work small; the threads take turns.
 * Before the analysis told system calls from faults, all their system time read as page faults
 * ("Page faults and kernel memory work: 90.9% of the threads' time awake", high), as it did for
 * two Python threads handing the GIL over.
 * Usage: handoff_faults [turns=200000] [turns per fresh page=16] */
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include "truth.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;
static long turns, per_page;
static char *pages;
static long next_page;

static void *player(void *arg) {
    truth_start();
    int me = (int)(long)arg;
    for (long i = 0; i < turns; i++) {
        pthread_mutex_lock(&lock);
        while (turn != me) pthread_cond_wait(&turn_changed, &lock);
        if (i % per_page == 0) pages[4096 * next_page++] = 1; /* a fresh page: one fault */
        turn = !me;
        pthread_cond_signal(&turn_changed);
        pthread_mutex_unlock(&lock);
    }
    truth_end("player");
    return NULL;
}

int main(int argc, char **argv) {
    truth_start();
    turns = arg_or(argc, argv, 1, 200000);
    per_page = arg_or(argc, argv, 2, 16);
    if (per_page < 1) per_page = 1;
    size_t size = (size_t)4096 * (size_t)(2 * turns / per_page + 2);
    pages = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) return 1;
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, player, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("%ld pages\n", next_page);
    truth_end("main");
    return 0;
}
