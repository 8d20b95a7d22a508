/* Clean case: an idle server thread pool, shaped like memcached with little traffic. Worker
 * threads wait in epoll_wait on their own eventfd; a dispatcher (main) hands a small request to
 * the next worker now and then and sleeps in between; a maintenance thread wakes from
 * pthread_cond_timedwait every 50 ms to do a little housekeeping.
 *
 * Demonstrates: waiting for work is not a scaling problem. Every thread is blocked (epoll_wait,
 * nanosleep, a condition wait) nearly all its life; the CPUs are idle because there is nothing to
 * do.
 * Correct diagnosis: blocked waiting for work (epoll_wait in serve, called from worker; cond
 * timed wait in maintenance) > 95% of each thread's life, effective utilization "idle"; NO
 * finding at medium or high -- in particular NO "poor parallel efficiency ... blocking".
 * Usage: idle_pool [workers=4] [duration ms=1500] [requests per second=200] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "truth.h"

#define STOP 0xffffull
static int event_fds[64];
static atomic_long served;
static pthread_mutex_t maint_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t maint_cond = PTHREAD_COND_INITIALIZER;
static int stopping;

__attribute__((noinline)) static double handle_request(uint64_t n) {
    double x = (double)n;
    for (int k = 0; k < 20000; k++) x = x * 0.99999 + 1e-6; /* ~10 us */
    return x;
}

__attribute__((noinline)) static void serve(int efd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = efd};
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    for (;;) {
        struct epoll_event got;
        if (epoll_wait(ep, &got, 1, -1) != 1) continue;
        uint64_t v;
        if (read(efd, &v, sizeof v) != sizeof v) continue;
        if (v >= STOP) break;
        handle_request(v);
        atomic_fetch_add(&served, 1);
    }
    close(ep);
}

static void *worker(void *arg) {
    truth_start();
    serve(event_fds[(long)arg]);
    truth_end("worker");
    return NULL;
}

static void *maintenance(void *arg) {
    (void)arg;
    truth_start();
    pthread_mutex_lock(&maint_lock);
    while (!stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&maint_cond, &maint_lock, &until);
        handle_request(1); /* housekeeping */
    }
    pthread_mutex_unlock(&maint_lock);
    truth_end("maintenance");
    return NULL;
}

int main(int argc, char **argv) {
    truth_start();
    int workers = (int)arg_or(argc, argv, 1, 4);
    if (workers > 64) workers = 64;
    long duration_ms = arg_or(argc, argv, 2, 1500), rate = arg_or(argc, argv, 3, 200);
    pthread_t t[64], m;
    for (long i = 0; i < workers; i++) {
        event_fds[i] = eventfd(0, EFD_CLOEXEC);
        pthread_create(&t[i], NULL, worker, (void *)i);
    }
    pthread_create(&m, NULL, maintenance, NULL);
    long requests = duration_ms * rate / 1000;
    struct timespec gap = {0, 1000000000L / rate};
    for (long r = 0; r < requests; r++) {
        uint64_t one = 1 + (uint64_t)r % 1000;
        if (write(event_fds[r % workers], &one, sizeof one) != sizeof one) break;
        nanosleep(&gap, NULL);
    }
    for (int i = 0; i < workers; i++) {
        uint64_t stop = STOP;
        if (write(event_fds[i], &stop, sizeof stop) != sizeof stop) return 1;
    }
    for (int i = 0; i < workers; i++) pthread_join(t[i], NULL);
    pthread_mutex_lock(&maint_lock);
    stopping = 1;
    pthread_cond_signal(&maint_cond);
    pthread_mutex_unlock(&maint_lock);
    pthread_join(m, NULL);
    printf("served %ld\n", atomic_load(&served));
    truth_end("main");
    return 0;
}
