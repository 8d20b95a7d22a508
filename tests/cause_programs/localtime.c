/* Threads formatting timestamps with localtime_r.
 *
 * Demonstrates: the timezone lock. glibc's localtime_r takes a process-wide lock (tzset_lock in
 * time/tzset.c) on every call to check the TZ variable and convert, so threads that format many
 * timestamps serialize on it.
 * Correct diagnosis: contention on a lock inside the C library, named: localtime_r (the timezone
 * lock, __tz_convert), called from format_stamp (localtime.c); a large lock share at 2 threads.
 * Remedy: convert once and add offsets (the timezone rarely changes), or cache per second/minute,
 * or use a library without the global lock. The existing rules already find this one on a quiet
 * machine; this program checks it stays found.
 * Usage: localtime [threads=2] [total calls=4000000] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "truth.h"

static long calls;

__attribute__((noinline)) static size_t format_stamp(time_t t, char *buf, size_t cap) {
    struct tm tm;
    localtime_r(&t, &tm);
    return strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
}

static void *worker(void *arg) {
    truth_start();
    char buf[64];
    size_t total = 0;
    time_t base = 1700000000 + (long)arg * 86400;
    for (long i = 0; i < calls; i++) total += format_stamp(base + i, buf, sizeof buf);
    truth_end("worker");
    return (void *)total;
}

int main(int argc, char **argv) {
    truth_start();
    setenv("TZ", "Europe/Paris", 1);
    tzset();
    int threads = (int)arg_or(argc, argv, 1, 2);
    if (threads > 256) threads = 256;
    calls = arg_or(argc, argv, 2, 4000000) / threads;
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    puts("done");
    truth_end("main");
    return 0;
}
