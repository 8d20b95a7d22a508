/* The floor of an allocator hook: LD_PRELOAD libraries that do less than the interposer, built
 * with -DFLOOR=N (benches/hook_floor.sh):
 *   0  pass-through: malloc and free forward to glibc's (the cost of a second function)
 *   1  + the thread's record through a TLS pointer and one countdown each (what any sampling
 *        hook needs)
 *   2  + exact counts as the interposer keeps them: malloc's calls, bytes and size bucket, free's
 *        calls, each call's count compared with the thread's next timed one
 *   3  the same counts kept with more increments: five per malloc, two per free
 *   4  2's counts with the record in a mapping of its own (as the interposer's thread nodes)
 *        instead of static TLS
 *   5  the thread's record through a TLS pointer and the size test, nothing counted (what
 *        finding per-thread state costs)
 *   6  exact counts in one increment per call: malloc counts its request's exact size in a table
 *        of 1000 (calls, bytes and size buckets follow from it), free its calls; no countdown
 * Nothing is recorded or written; the record lives in static TLS (but for 4). The record is made
 * in a function of its own, reached by a tail call: with the mapping's mmap inlined into the
 * hooks, GCC gave them a stack frame, and 4 measured that frame rather than where its record is. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/mman.h>
#include <stddef.h>
#include <stdint.h>

struct record {
    uint64_t calls, bytes, free_calls, timed_at, free_timed_at;
    int64_t bytes_left;
    uint32_t countdown, free_countdown;
    uint64_t hist[160];
#if FLOOR == 6
    uint64_t by_size[1000];
#endif
};
static __thread struct record own __attribute__((tls_model("initial-exec")));
static __thread struct record *self __attribute__((tls_model("initial-exec")));
static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static uint8_t bucket[130];

__attribute__((constructor)) static void init(void) {
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    for (int i = 0; i < 130; i++) bucket[i] = (uint8_t)i;
}

__attribute__((noinline)) static struct record *new_record(void) {
#if FLOOR == 4
    void *p = mmap(NULL, sizeof(struct record), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct record *t = self = p == MAP_FAILED ? &own : p;
#else
    struct record *t = self = &own;
#endif
    t->countdown = t->free_countdown = 1u << 30;
    t->timed_at = t->free_timed_at = UINT64_MAX;
    t->bytes_left = INT64_MAX;
    return t;
}

/* A thread's first call makes its record and calls the hook again (a tail call, as the rest of
 * the slow paths: the hooks keep no stack frame, as the interposer's fast parts). */
void *malloc(size_t n);
void free(void *p);
__attribute__((noinline, unused)) static void *malloc_first(size_t n) {
    new_record();
    return malloc(n);
}
__attribute__((noinline, unused)) static void free_first(void *p) {
    new_record();
    free(p);
}

__attribute__((noinline, unused)) static void *slow_malloc(size_t n) { return real_malloc(n); }
__attribute__((noinline, unused)) static void slow_free(void *p) { real_free(p); }

void *malloc(size_t n) {
#if FLOOR == 0
    return real_malloc(n);
#else
    struct record *t = self;
    if (__builtin_expect(!t, 0)) return malloc_first(n);
    if (n >= 1000) return slow_malloc(n);
#if FLOOR == 5
    (void)t;
#elif FLOOR == 6
    t->by_size[n]++;
#elif FLOOR == 1
    if (__builtin_expect(--t->countdown == 0, 0)) return slow_malloc(n);
#elif FLOOR == 2 || FLOOR == 4
    uint64_t c = ++t->calls;
    t->bytes += n;
    t->hist[bucket[(n + 7) >> 3]]++;
    if (__builtin_expect(c >= t->timed_at, 0)) return slow_malloc(n);
#else
    t->calls++;
    t->bytes += n;
    t->hist[bucket[(n + 7) >> 3]]++;
    if (__builtin_expect(--t->countdown == 0, 0)) return slow_malloc(n);
    if ((t->bytes_left -= (int64_t)n) < 0) return slow_malloc(n);
#endif
    return real_malloc(n);
#endif
}

void free(void *p) {
#if FLOOR == 0
    real_free(p);
#else
    struct record *t = self;
    if (__builtin_expect(!t, 0)) return free_first(p);
#if FLOOR == 5
    (void)t;
#elif FLOOR == 6
    t->free_calls++;
#elif FLOOR == 1
    if (__builtin_expect(--t->free_countdown == 0, 0)) return slow_free(p);
#elif FLOOR == 2 || FLOOR == 4
    if (__builtin_expect(++t->free_calls >= t->free_timed_at, 0)) return slow_free(p);
#else
    t->free_calls++;
    if (__builtin_expect(--t->countdown == 0, 0)) return slow_free(p);
#endif
    if (p && ((const size_t *)p)[-1] < 1000) return real_free(p);
    slow_free(p);
#endif
}
