/* Lock kinds and many locks, all in the main thread, uncontended, in this order:
 *   - one rwlock, read-locked 100 times and write-locked 50 times;
 *   - one spinlock, locked 70 times;
 *   - 1000 distinct mutexes, each locked and unlocked 3 times (more locks than a per-thread table
 *     of a few hundred slots holds: every acquisition must still be counted somewhere).
 * Prints "rwlock ADDRESS spin ADDRESS mutexes FIRST LAST" so the test can find them. With the
 * argument "empty" it takes no lock but prints the same line. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MUTEXES 1000

static pthread_mutex_t mutexes[MUTEXES];
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static volatile int work;

int main(int argc, char **argv) {
    int empty = argc > 1 && strcmp(argv[1], "empty") == 0;
    for (int i = 0; i < MUTEXES; i++) pthread_mutex_init(&mutexes[i], NULL);
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    if (!empty) {
        for (int i = 0; i < 100; i++) {
            pthread_rwlock_rdlock(&rw);
            work++;
            pthread_rwlock_unlock(&rw);
        }
        for (int i = 0; i < 50; i++) {
            pthread_rwlock_wrlock(&rw);
            work++;
            pthread_rwlock_unlock(&rw);
        }
        for (int i = 0; i < 70; i++) {
            pthread_spin_lock(&spin);
            work++;
            pthread_spin_unlock(&spin);
        }
        for (int round = 0; round < 3; round++)
            for (int i = 0; i < MUTEXES; i++) {
                pthread_mutex_lock(&mutexes[i]);
                work++;
                pthread_mutex_unlock(&mutexes[i]);
            }
    }
    printf("rwlock %p spin %p mutexes %p %p\n", (void *)&rw, (void *)&spin, (void *)&mutexes[0],
           (void *)&mutexes[MUTEXES - 1]);
    return 0;
}
