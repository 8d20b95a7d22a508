/* Allocation call stacks: sampling, unwinding, deduplication, and the list of loaded objects.
 *
 * Sampling (see docs/STACKS.md): every allocation call subtracts its size from a per-thread byte
 * countdown drawn from an exponential distribution (mean ss_config.stack_bytes), as tcmalloc does;
 * and one timed call in K (the timed calls are themselves a random 1-in-N sample) is taken too, so
 * that small calls are represented by count. A call of size s is thus taken with probability
 * p(s) = 1 - (1 - 1/(N*K)) * exp(-s/mean), and each sample carries the weight 1/p(s).
 *
 * Unwinding uses the interposer's own unwinder (unwind.c: the .eh_frame rules of each pc, cached),
 * with libgcc's _Unwind_Backtrace behind it where the program has libgcc_s loaded (or where the
 * fast one cannot work: then it is opened at start-up). It only ever runs on sampled calls, under
 * the reentrancy guard, and in the CPU samples' signal handler.
 *
 * Stacks are deduplicated in one global open-addressing table whose slots are claimed with a CAS
 * on the hash word; counters are atomic adds (sampled calls only). Nothing here allocates. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

int ss_stacks_on;
static uint32_t ss_stack_k;        /* timed calls per count-sampled stack */
static double ss_count_q;          /* 1/(N*K): the count-based inclusion probability */
static double ss_inv_mean_bytes;   /* 1/mean, 0 when byte sampling is off */

static _Unwind_Reason_Code (*ss_unwind_backtrace)(_Unwind_Trace_Fn, void *);
static int (*ss_unw_backtrace)(void **, int); /* libunwind's, when chosen (STALLSCOPE_UNWINDER) */
static _Unwind_Ptr (*ss_unwind_getip)(struct _Unwind_Context *);
static uintptr_t ss_self_lo, ss_self_hi; /* the interposer's own code: frames cut from stacks */

/* ---- the site table ---- */

#define SS_SITE_SLOTS 32768u /* allocation, lock and thread-state sample stacks */
#define SS_SITE_PROBES 64u

/* A stack's record and its frames are kept in the order stacks were first seen (a stack's id is
 * its place in that order), and a table of ids finds them by hash: a program's first stacks fill
 * a few pages, where records placed by their hash took a fresh page each (node -e 0: 700 page
 * faults for 400 stacks). */
struct ss_site {
    uint64_t hash;
    uint32_t ready; /* in the table: its id can be found (hash, pcs, depth and fn were written first) */
    uint32_t depth;
    uint32_t fn;
    uint32_t written; /* its STACK record is in the file */
    uint32_t pcs_at;  /* its frames in ss_site_frames */
    uint32_t py_n;    /* its Python frames, in ss_site_py from py_at (python.c) */
    uint32_t py_at;
    uint32_t pad;
    uint64_t first_mono_ns;
    uint64_t samples;
    uint64_t sampled_bytes;
    uint64_t weight_q16;
    uint64_t est_bytes;
    uint64_t est_ticks;
    uint64_t last_samples; /* what the last flush wrote */
};

static struct ss_site *ss_sites;                      /* by id */
/* The stacks' frames, one after another (a site's from its pcs_at): room for SS_STACK_MAX_FRAMES
 * for every id, so never short. */
static uint64_t *ss_site_frames;
static uint64_t ss_site_frames_used;
/* The stacks' Python frames, one after another (in a process that runs CPython only): a shared
 * pool, a stack that finds it full is not recorded. */
#define SS_SITE_PY_POOL (SS_SITE_SLOTS * 12u)
static struct ss_py_raw *ss_site_py;
static uint64_t ss_site_py_used;
static uint64_t ss_dropped;
/* Open addressing by hash: id + 1, 0 for a free slot. */
static uint16_t *ss_site_ids; /* 16 bits hold id + 1 (at most SS_SITE_SLOTS): half the pages */
_Static_assert(SS_SITE_SLOTS <= UINT16_MAX, "an id + 1 fits in a slot of the index");
/* Records taken so far (ids 0 .. claimed - 1; one being filled, or left by a thread that lost
 * its slot to the same stack, is not ready): a flush looks at these only, so that a fork child
 * with none never touches the tables' pages. */
static uint32_t ss_site_claimed;
static int ss_modules_needed; /* the file being written needs MODULE records */
static int ss_modules_stale;  /* a fork child's: the flags say what the parent's file holds */

/* ---- small maths without libm ---- */

static uint64_t ss_rand(struct ss_thread *t) {
    uint64_t x = t->rng; /* xorshift64, shared with the timing countdown */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t->rng = x;
    return x;
}

/* Natural logarithm of x > 0: exponent, then 2*atanh((m-1)/(m+1)) on the mantissa. */
static double ss_ln(double x) {
    uint64_t bits;
    memcpy(&bits, &x, 8);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &bits, 8);
    if (m > 1.41421356237) {
        m *= 0.5;
        e++;
    }
    double z = (m - 1) / (m + 1), z2 = z * z;
    double s = z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 + z2 / 11)))));
    return 2 * s + e * 0.69314718055994531;
}

/* 1 - exp(-x) for x >= 0. */
static double ss_one_minus_exp_neg(double x) {
    if (x > 40) return 1;
    if (x < 1e-3) return x * (1 - x * (0.5 - x / 6));
    int k = 0;
    while (x > 0.0625) {
        x *= 0.5;
        k++;
    }
    double y = 1 - x * (1 - x * (0.5 - x * (1.0 / 6 - x * (1.0 / 24 - x / 120)))); /* exp(-x) */
    while (k-- > 0) y *= y;
    return 1 - y;
}

static int64_t ss_next_bytes(struct ss_thread *t) {
    if (ss_inv_mean_bytes == 0) return INT64_MAX;
    double u = ((double)(ss_rand(t) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
    double v = -ss_ln(u) / ss_inv_mean_bytes;
    return v > 9e18 ? INT64_MAX : (int64_t)v + 1;
}

static uint32_t ss_next_k(struct ss_thread *t) {
    if (ss_stack_k <= 1) return 1;
    return 1 + (uint32_t)(ss_rand(t) % (2ull * ss_stack_k - 1));
}

/* The stacks part of a node, for a new thread (ss_thread_reset, threads.c); again for the main
 * thread once ss_stacks_init knows whether stacks are taken. */
void ss_stacks_thread_reset(struct ss_thread *t) {
    t->stacks.bytes_left = ss_stacks_on ? ss_next_bytes(t) : INT64_MAX;
    t->stacks.countdown = ss_next_k(t);
    t->stacks.sample_weight_q16 = 0;
    t->stacks.last_waiter = t->stacks.last_holder = 0;
}

/* ---- unwinding ---- */

struct ss_unwind {
    uint64_t *pcs;
    uint32_t n;
    int keep_own; /* keep the interposer's frames (thread-state samples taken inside a hook) */
};

static _Unwind_Reason_Code ss_unwind_cb(struct _Unwind_Context *ctx, void *arg) {
    struct ss_unwind *u = arg;
    uintptr_t ip = ss_unwind_getip(ctx);
    if (ip == 0) return _URC_END_OF_STACK;
    if (!u->keep_own && ip >= ss_self_lo && ip < ss_self_hi) return _URC_NO_REASON; /* hooks, main's wrapper */
    u->pcs[u->n++] = ip;
    return u->n == SS_STACK_MAX_FRAMES ? _URC_NORMAL_STOP : _URC_NO_REASON;
}

static uint64_t ss_hash_stack(const uint64_t *pcs, uint32_t n, uint32_t fn, const struct ss_py_raw *py, uint32_t npy) {
    uint64_t h = 0xcbf29ce484222325ull ^ fn;
    for (uint32_t i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (uint32_t i = 0; i < npy; i++) { /* the Python frames: code, instruction and run boundary */
        h ^= py[i].code ^ py[i].fp ^ ((uint64_t)(uint32_t)py[i].offset << 32) ^ py[i].flags;
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

/* Takes a record for a new stack (its id), written but not yet findable; UINT32_MAX when all
 * are taken. */
static uint32_t ss_site_new(const uint64_t *pcs, uint32_t n, uint32_t fn, uint64_t h, const struct ss_py_raw *py,
                            uint32_t npy) {
    if (__atomic_load_n(&ss_site_claimed, __ATOMIC_RELAXED) >= SS_SITE_SLOTS) return UINT32_MAX;
    uint32_t id = __atomic_fetch_add(&ss_site_claimed, 1, __ATOMIC_ACQ_REL);
    if (id >= SS_SITE_SLOTS) return UINT32_MAX;
    struct ss_site *site = &ss_sites[id];
    uint64_t at = __atomic_fetch_add(&ss_site_frames_used, n, __ATOMIC_RELAXED);
    /* Within a window ids bound the frames; a thread still taking a stack of the last window
     * while ss_stacks_window_reset runs could add its frames to the new count: the record is
     * then left unready, as one that lost its slot. */
    if (at + n > (uint64_t)SS_SITE_SLOTS * SS_STACK_MAX_FRAMES) return UINT32_MAX;
    memcpy(ss_site_frames + at, pcs, n * sizeof *pcs);
    site->py_n = 0;
    if (npy && ss_site_py) {
        uint64_t pat = __atomic_fetch_add(&ss_site_py_used, npy, __ATOMIC_RELAXED);
        if (pat + npy > SS_SITE_PY_POOL) return UINT32_MAX; /* left unready */
        memcpy(ss_site_py + pat, py, npy * sizeof *py);
        site->py_at = (uint32_t)pat;
        site->py_n = npy;
    }
    site->pcs_at = (uint32_t)at;
    site->hash = h;
    site->depth = n;
    site->fn = fn;
    site->first_mono_ns = ss_mono_ns();
    return id;
}

static uint32_t ss_site_for(const uint64_t *pcs, uint32_t n, uint32_t fn, const struct ss_py_raw *py, uint32_t npy) {
    if (n > SS_STACK_MAX_FRAMES) n = SS_STACK_MAX_FRAMES; /* what each id has room for */
    uint64_t h = ss_hash_stack(pcs, n, fn, py, npy);
    uint32_t mine = UINT32_MAX; /* a record taken for this stack, not yet in the table */
    for (uint32_t i = 0; i < SS_SITE_PROBES; i++) {
        uint16_t *slot = &ss_site_ids[(uint32_t)(h + i) & (SS_SITE_SLOTS - 1)];
        uint16_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            if (mine == UINT32_MAX) mine = ss_site_new(pcs, n, fn, h, py, npy);
            if (mine == UINT32_MAX) break;
            /* The record is written before its id is published (release), so a thread that
             * finds the id reads its hash. */
            if (__atomic_compare_exchange_n(slot, &cur, (uint16_t)(mine + 1), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&ss_sites[mine].ready, 1, __ATOMIC_RELEASE);
                return mine + 1;
            }
        }
        /* A 64-bit hash match is taken as the same stack; a record taken for it meanwhile is
         * left unready (never written to the file). */
        if (ss_sites[cur - 1].hash == h) return cur;
    }
    __atomic_fetch_add(&ss_dropped, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Takes the caller's stack and returns its site (index + 1), or 0. `fn` is an enum ss_fn for an
 * allocation, or SS_FN_COUNT + role for a lock stack. */
static uint32_t ss_capture(uint32_t fn) {
    uint64_t pcs[SS_STACK_MAX_FRAMES];
    struct ss_unwind u = {pcs, 0, 0};
    SS_GUARD_BEGIN(saved);
    int fast = ss_fast_unwind_on ? ss_fast_backtrace(pcs, SS_STACK_MAX_FRAMES) : -1;
    if (fast >= 0) {
        u.n = (uint32_t)fast;
    } else if (ss_unw_backtrace) {
        void *raw[SS_STACK_MAX_FRAMES + 8];
        int n = ss_unw_backtrace(raw, SS_STACK_MAX_FRAMES + 8);
        for (int i = 0; i < n && u.n < SS_STACK_MAX_FRAMES; i++) {
            uintptr_t ip = (uintptr_t)raw[i];
            if (ip != 0 && (ip < ss_self_lo || ip >= ss_self_hi)) pcs[u.n++] = ip;
        }
    } else if (ss_unwind_backtrace) {
        ss_unwind_backtrace(ss_unwind_cb, &u);
    }
    struct ss_py_raw py[SS_PY_MAX_FRAMES];
    uint32_t npy = u.n && ss_site_py ? ss_py_capture(py, SS_PY_MAX_FRAMES) : 0;
    SS_GUARD_END(saved);
    if (u.n == 0) return 0;
    return ss_site_for(pcs, u.n, fn, py, npy);
}

/* The caller's stack as a CPU sample's would be (index + 1, 0: none): a TBB algorithm's caller
 * (itt.c). */
uint32_t ss_stack_here(void) {
    if (!__atomic_load_n(&ss_stacks_on, __ATOMIC_ACQUIRE)) return 0;
    return ss_capture(SS_STACK_KIND_CPU);
}

uint32_t ss_stack_intern(const uint64_t *pcs, uint32_t n, uint32_t kind) {
    return ss_stack_intern_py(pcs, n, kind, NULL, 0);
}

/* The same, with Python frames (a blocked thread's, read by the flusher). */
uint32_t ss_stack_intern_py(const uint64_t *pcs, uint32_t n, uint32_t kind, const struct ss_py_raw *py, uint32_t npy) {
    if (!__atomic_load_n(&ss_stacks_on, __ATOMIC_ACQUIRE) || n == 0) return 0;
    return ss_site_for(pcs, n, kind, py, ss_site_py ? npy : 0);
}

/* Called from the CPU-sample signal handler, under the guard. The unwinder walks the handler's
 * frames, the kernel's signal frame (__restore_rt), the interrupted instruction and its callers.
 * The callers are kept, the interposer's hooks among them (a sample inside a hook belongs to the
 * call it wraps), deduplicated without the interrupted pc (the sample carries it), so that
 * samples along one call chain share a stack. */
uint32_t ss_stack_of_signal(uint64_t pc, uint64_t sp, uint64_t rbp) {
    uint64_t pcs[SS_STACK_MAX_FRAMES];
    /* The thread's Python frames, where it runs CPython: frozen while the handler runs. */
    struct ss_py_raw py[SS_PY_MAX_FRAMES];
    uint32_t npy = ss_site_py ? ss_py_capture(py, SS_PY_MAX_FRAMES) : 0;
    /* From the interrupted registers by the cached rules when it can (docs/STACKS.md): a few
     * loads a frame against libgcc's 2,000 instructions, in a handler that pauses the thread. */
    int fast = ss_fast_unwind_on ? ss_fast_backtrace_from(pc, sp, rbp, pcs, SS_STACK_MAX_FRAMES) : -1;
    if (fast >= 0) return fast > 0 ? ss_site_for(pcs, (uint32_t)fast, SS_STACK_KIND_CPU, py, npy) : 0;
    struct ss_unwind u = {pcs, 0, 1};
    if (ss_unw_backtrace) {
        void *raw[SS_STACK_MAX_FRAMES + 8];
        int n = ss_unw_backtrace(raw, SS_STACK_MAX_FRAMES + 8);
        for (int i = 0; i < n && u.n < SS_STACK_MAX_FRAMES; i++)
            if (raw[i]) pcs[u.n++] = (uintptr_t)raw[i];
    } else if (ss_unwind_backtrace) {
        ss_unwind_backtrace(ss_unwind_cb, &u);
    }
    for (uint32_t i = 0; i < u.n; i++)
        if (pcs[i] == pc) return i + 1 < u.n ? ss_site_for(pcs + i + 1, u.n - i - 1, SS_STACK_KIND_CPU, py, npy) : 0;
    return 0;
}

/* ---- lock sites: (lock, kind, role, stack) -> sampled counts ---- */

#define SS_LOCK_SITE_SLOTS 4096u
#define SS_LOCK_STACK_INTERVAL_NS 10000000ull /* per thread and role: at most 100 stacks a second */

/* Kept in the order first seen and found through a table of ids, as stacks are (ss_site_for). */
struct ss_lock_site_slot {
    uint64_t key;
    uint64_t address;
    uint32_t kind, role, stack, ready; /* ready: in the table */
    uint64_t events, wait_ticks;
};

static struct ss_lock_site_slot *ss_lock_sites; /* by id */
static uint16_t *ss_lock_site_ids;              /* by key: id + 1, 0 for a free slot */
_Static_assert(SS_LOCK_SITE_SLOTS <= UINT16_MAX, "an id + 1 fits in a slot of the lock sites' index");
static uint32_t ss_lock_sites_claimed;          /* records taken (ids 0 .. claimed - 1) */
static uint64_t ss_lock_interval_ticks;

static uint64_t ss_mix(uint64_t x) { /* splitmix64's finaliser */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint32_t ss_lock_site_for(const void *lock, uint32_t kind, uint32_t role, uint32_t stack) {
    uint64_t key = ss_mix((uint64_t)(uintptr_t)lock ^ ss_mix(((uint64_t)stack << 8) | (kind << 4) | role));
    uint32_t mine = UINT32_MAX; /* a record taken for this site, not yet in the table */
    for (uint32_t i = 0; i < SS_SITE_PROBES; i++) {
        uint16_t *slot = &ss_lock_site_ids[(uint32_t)(key + i) & (SS_LOCK_SITE_SLOTS - 1)];
        uint16_t cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            if (mine == UINT32_MAX && __atomic_load_n(&ss_lock_sites_claimed, __ATOMIC_RELAXED) < SS_LOCK_SITE_SLOTS) {
                uint32_t id = __atomic_fetch_add(&ss_lock_sites_claimed, 1, __ATOMIC_ACQ_REL);
                if (id < SS_LOCK_SITE_SLOTS) {
                    struct ss_lock_site_slot *l = &ss_lock_sites[id];
                    l->key = key;
                    l->address = (uintptr_t)lock;
                    l->kind = kind;
                    l->role = role;
                    l->stack = stack;
                    mine = id;
                }
            }
            if (mine == UINT32_MAX) break;
            if (__atomic_compare_exchange_n(slot, &cur, (uint16_t)(mine + 1), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                __atomic_store_n(&ss_lock_sites[mine].ready, 1, __ATOMIC_RELEASE);
                return mine + 1;
            }
        }
        /* The same site (a record taken for it meanwhile is left unready: never written). */
        const struct ss_lock_site_slot *l = &ss_lock_sites[cur - 1];
        if (l->key == key && l->address == (uintptr_t)lock && l->kind == kind && l->role == role && l->stack == stack)
            return cur;
    }
    __atomic_fetch_add(&ss_dropped, 1, __ATOMIC_RELAXED);
    return 0;
}

static int ss_lock_rate_ok(uint64_t *last) {
    uint64_t now = ss_ticks();
    if (*last != 0 && now - *last < ss_lock_interval_ticks) return 0;
    *last = now;
    return 1;
}

int ss_lock_waiter_stack_due(struct ss_thread *t, uint64_t now) {
    uint64_t last = t->stacks.last_waiter;
    return ss_lock_sites && (last == 0 || now - last >= ss_lock_interval_ticks);
}

uint32_t ss_lock_waiter_stack(struct ss_thread *t, const void *lock, uint32_t kind) {
    return ss_lock_waiter_stack_of(t, lock, kind, 0);
}

uint32_t ss_lock_waiter_stack_of(struct ss_thread *t, const void *lock, uint32_t kind, int first) {
    if (!ss_lock_sites) return 0;
    if (!ss_lock_rate_ok(&t->stacks.last_waiter) && !first) return 0;
    uint32_t stack = ss_capture(SS_FN_COUNT + SS_ROLE_WAITER);
    return stack ? ss_lock_site_for(lock, kind, SS_ROLE_WAITER, stack - 1) : 0;
}

void ss_lock_waiter_done(uint32_t lock_site, uint64_t wait_ticks) {
    struct ss_lock_site_slot *l = &ss_lock_sites[lock_site - 1];
    __atomic_fetch_add(&l->events, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&l->wait_ticks, wait_ticks, __ATOMIC_RELAXED);
}

void ss_lock_holder_stack(struct ss_thread *t, const void *lock, uint32_t kind) {
    if (!ss_lock_sites || !ss_lock_rate_ok(&t->stacks.last_holder)) return;
    uint32_t stack = ss_capture(SS_FN_COUNT + SS_ROLE_HOLDER);
    uint32_t site = stack ? ss_lock_site_for(lock, kind, SS_ROLE_HOLDER, stack - 1) : 0;
    if (site) __atomic_fetch_add(&ss_lock_sites[site - 1].events, 1, __ATOMIC_RELAXED);
}

/* The stack of a lock's initialisation, which names a lock on the heap. Initialisations are
 * usually few; past a budget (a program that makes a lock per object) no more are taken. */
#define SS_LOCK_INIT_STACKS 512u
static uint32_t ss_lock_init_taken;

void ss_lock_init_stack(struct ss_thread *t, const void *lock, uint32_t kind) {
    (void)t;
    if (!ss_lock_sites || __atomic_load_n(&ss_lock_init_taken, __ATOMIC_RELAXED) >= SS_LOCK_INIT_STACKS) return;
    __atomic_fetch_add(&ss_lock_init_taken, 1, __ATOMIC_RELAXED);
    uint32_t stack = ss_capture(SS_STACK_KIND_INIT);
    uint32_t site = stack ? ss_lock_site_for(lock, kind, SS_ROLE_INIT, stack - 1) : 0;
    if (site) __atomic_fetch_add(&ss_lock_sites[site - 1].events, 1, __ATOMIC_RELAXED);
}

/* A sampled allocation call (the timing countdown or the byte countdown fired): decides whether
 * its stack is taken, and if so records it; returns the site (index + 1) or 0. */
uint32_t ss_stack_sample(struct ss_thread *t, enum ss_fn fn, size_t bytes, int timed, int byte_fired) {
    if (!ss_stacks_on) {
        if (byte_fired) t->stacks.bytes_left = INT64_MAX;
        return 0;
    }
    int count_fired = 0;
    if (timed && ss_count_q > 0 && --t->stacks.countdown == 0) {
        t->stacks.countdown = ss_next_k(t);
        count_fired = 1;
    }
    if (byte_fired) t->stacks.bytes_left = ss_next_bytes(t);
    if (!count_fired && !byte_fired) return 0;

    uint32_t site = ss_capture((uint32_t)fn);
    if (!site) return 0;

    /* A request below ss_fast_bytes is not in the byte process (alloc.c): its count only. */
    double pb = ss_inv_mean_bytes > 0 && bytes >= ss_fast_bytes ? ss_one_minus_exp_neg((double)bytes * ss_inv_mean_bytes) : 0;
    /* A count-sampled stack is one timed call in K, so its probability follows fn's period. */
    double q = fn < SS_FN_COUNT ? ss_count_q / ss_fn_weight(t, fn) : ss_count_q;
    double p = 1 - (1 - q) * (1 - pb);
    double w = p > 0 ? 1 / p : 0;
    struct ss_site *s = &ss_sites[site - 1];
    __atomic_fetch_add(&s->samples, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->sampled_bytes, bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->weight_q16, (uint64_t)(w * 65536.0 + 0.5), __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->est_bytes, (uint64_t)((double)bytes * w + 0.5), __ATOMIC_RELAXED);
    t->stacks.sample_weight_q16 = (uint64_t)(w * 65536.0 + 0.5); /* for ss_stack_time */
    return site;
}

/* Adds the duration of a sampled call, weighted like its sample. */
void ss_stack_time(struct ss_thread *t, uint32_t site, uint64_t ticks) {
    uint64_t wq = t->stacks.sample_weight_q16;
    uint64_t est = (uint64_t)(((unsigned __int128)ticks * wq) >> 16);
    __atomic_fetch_add(&ss_sites[site - 1].est_ticks, est, __ATOMIC_RELAXED);
}

/* ---- loaded objects ---- */

#define SS_MODULES_MAX 1024u

struct ss_module {
    uint64_t bias, lo, hi, seen;
    uint64_t gone;      /* when found unloaded (0: loaded) */
    uint32_t present;   /* seen by the current scan */
    uint32_t gone_written;
    uint32_t written;
    uint32_t bid_len;
    unsigned char bid[SS_BUILD_ID_MAX];
    char path[512];
};

static struct ss_module ss_modules[SS_MODULES_MAX];
static uint32_t ss_nmodules;
static int ss_modules_lock;
static char ss_exe_path[512];

static int ss_modules_try_lock(int wait_ms) {
    for (int i = 0;; i++) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&ss_modules_lock, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 1;
        if (i >= wait_ms * 10) return 0;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

static void ss_modules_unlock(void) { __atomic_store_n(&ss_modules_lock, 0, __ATOMIC_RELEASE); }

/* Entries are only appended (and published by the count), so a reader needs no lock. The
 * interposer's own code does not count: its frames are cut from every stack. */
int ss_modules_contain(uint64_t address) {
    if (address >= ss_self_lo && address < ss_self_hi) return 0;
    uint32_t n = __atomic_load_n(&ss_nmodules, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++)
        if (address >= ss_modules[i].lo && address < ss_modules[i].hi && !ss_modules[i].gone) return 1;
    return 0;
}

static uint32_t ss_build_id(struct dl_phdr_info *info, unsigned char *out) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const unsigned char *name = p + sizeof *nh;
            const unsigned char *desc = name + ((nh->n_namesz + 3) & ~3u);
            const unsigned char *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                uint32_t n = nh->n_descsz < SS_BUILD_ID_MAX ? nh->n_descsz : SS_BUILD_ID_MAX;
                memcpy(out, desc, n);
                return n;
            }
            p = next;
        }
    }
    return 0;
}

static int ss_module_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    uintptr_t lo, hi;
    ss_object_extent(info, &lo, &hi);
    if (hi <= lo) return 0;
    const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : ss_exe_path;
    char full[512];
    if (path[0] != '/' && strchr(path, '/') && getcwd(full, sizeof full - 1)) { /* dlopen("./x.so") */
        struct ss_str s = {full, strlen(full), sizeof full};
        ss_str_cat(&s, "/");
        ss_str_cat(&s, path);
        path = full;
    }
    for (uint32_t i = 0; i < ss_nmodules; i++) {
        struct ss_module *m = &ss_modules[i];
        if (!m->gone && m->bias == info->dlpi_addr && m->lo == lo && m->hi == hi && strcmp(m->path, path) == 0) {
            m->present = 1;
            return 0;
        }
    }
    if (ss_nmodules >= SS_MODULES_MAX) return 1;
    struct ss_module *m = &ss_modules[ss_nmodules];
    memset(m, 0, sizeof *m);
    m->bias = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    m->seen = ss_mono_ns();
    size_t n = strlen(path);
    if (n >= sizeof m->path) n = sizeof m->path - 1;
    memcpy(m->path, path, n);
    m->bid_len = ss_build_id(info, m->bid);
    m->present = 1;
    __atomic_store_n(&ss_nmodules, ss_nmodules + 1, __ATOMIC_RELEASE);
    return 0;
}

static int ss_first_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    *(uintptr_t *)arg = (uintptr_t)info->dlpi_phdr;
    return 1; /* the first is the main program */
}

/* The file mapped at `addr`, from /proc/self/maps, into out; its length, or 0. */
static size_t ss_mapped_file(uintptr_t addr, char *out, size_t cap) {
    static char buf[4096];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t have = 0, found = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
            *nl = 0;
            const char *p = line;
            uint64_t lo = 0, hi = 0;
            while (*p && *p != '-') lo = lo * 16 + (uint64_t)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), p++;
            if (*p == '-') p++;
            while (*p && *p != ' ') hi = hi * 16 + (uint64_t)(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), p++;
            const char *path = strchr(p, '/');
            if (addr >= lo && addr < hi && path) {
                size_t len = strlen(path);
                if (len < cap) {
                    memcpy(out, path, len + 1);
                    found = len;
                }
                close(fd);
                return found;
            }
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        memmove(buf, line, have);
        if (have == sizeof buf - 1) have = 0; /* a line longer than the buffer: skipped */
    }
    close(fd);
    return 0;
}

/* The main program's file: /proc/self/exe, except for a program started through its loader
 * (`ld-linux-x86-64.so.2 ./prog`), whose /proc/self/exe is the loader: then the file mapped
 * where the first loaded object (the program) is. Returns its length (0: unknown). */
size_t ss_main_program(char *out, size_t cap) {
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0) {
        out[0] = 0;
        return 0;
    }
    out[n] = 0;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (strcmp(base, "ld-linux-x86-64.so.2") != 0) return (size_t)n;
    uintptr_t phdr = 0;
    dl_iterate_phdr(ss_first_object, &phdr);
    char file[4096];
    size_t len = phdr ? ss_mapped_file(phdr, file, sizeof file) : 0;
    if (len && len < cap) {
        memcpy(out, file, len + 1);
        return len;
    }
    return (size_t)n;
}

/* Adds the objects loaded now to the list (which only grows: an unloaded object stays in it). */
static void ss_modules_scan(void) {
    if (!ss_exe_path[0]) ss_main_program(ss_exe_path, sizeof ss_exe_path);
    for (uint32_t i = 0; i < ss_nmodules; i++) ss_modules[i].present = 0;
    if (dl_iterate_phdr(ss_module_cb, NULL) != 0) return; /* the table is full: presence unknown */
    uint64_t now = ss_mono_ns();
    int unloaded = 0;
    for (uint32_t i = 0; i < ss_nmodules; i++)
        if (!ss_modules[i].present && !ss_modules[i].gone) ss_modules[i].gone = now, unloaded = 1;
    if (unloaded) ss_fast_unwind_forget(); /* its addresses may hold other code from now on */
}

/* What is loaded, noted around a dlclose (lifecycle.c), so that an unloaded object's frames
 * still resolve and its unload has a time. */
void ss_stacks_note_modules(void) {
    if (!ss_stacks_on || ss_busy || ss_pid != getpid()) return;
    SS_GUARD_BEGIN(saved);
    if (ss_modules_try_lock(50)) { /* bounded: a destructor's nested dlclose must not deadlock */
        ss_modules_scan();
        ss_modules_unlock();
    }
    SS_GUARD_END(saved);
}

/* ---- start-up, fork, writing ---- */

/* No unwinder could be loaded although stacks were asked for (SS_PROCESS_NO_UNWINDER). */
int ss_stacks_no_unwinder;

/* libgcc_s.so.1, the unwinder: by name (the loader's search path), else beside the C library the
 * program runs on (a glibc under its own prefix whose loader does not search the system's
 * directories), else in the system's library directories. */
static void *ss_open_libgcc(void) {
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
    if (gcc) return gcc;
    char path[1024];
    const char *libc = ss_object_path((void *)getpid);
    if (libc) {
        const char *slash = strrchr(libc, '/');
        size_t dir = slash ? (size_t)(slash - libc) : 0;
        if (dir && dir + sizeof "/libgcc_s.so.1" < sizeof path) {
            memcpy(path, libc, dir);
            memcpy(path + dir, "/libgcc_s.so.1", sizeof "/libgcc_s.so.1");
            if ((gcc = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL) return gcc;
        }
    }
    static const char *const system_dirs[] = {"/lib/x86_64-linux-gnu/libgcc_s.so.1",
                                              "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1", "/lib64/libgcc_s.so.1",
                                              "/usr/lib64/libgcc_s.so.1", "/usr/lib/libgcc_s.so.1"};
    for (size_t i = 0; i < sizeof system_dirs / sizeof system_dirs[0]; i++)
        if ((gcc = dlopen(system_dirs[i], RTLD_NOW | RTLD_LOCAL)) != NULL) return gcc;
    return NULL;
}

/* Whether an object named libgcc_s.so.1 (by file name or DT_SONAME) is loaded: asked first, since
 * dlopen(RTLD_NOLOAD) of a name not loaded still searches for the file, opens and reads it (eight
 * system calls and the loader's cache mapped, in every process of a C program). */
static int ss_libgcc_loaded_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    static const char name[] = "libgcc_s.so.1";
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    if (strcmp(slash ? slash + 1 : info->dlpi_name ? info->dlpi_name : "", name) == 0) return 1;
    const char *soname = ss_soname_of(info);
    return soname && strcmp(soname, name) == 0;
}

/* Takes libgcc's unwinder from `gcc` (a handle, or NULL: none). */
static void ss_use_libgcc(void *gcc) {
    if (!gcc) return;
    *(void **)&ss_unwind_getip = dlsym(gcc, "_Unwind_GetIP");
    if (ss_unwind_getip) *(void **)&ss_unwind_backtrace = dlsym(gcc, "_Unwind_Backtrace");
}

void ss_stacks_init(void) {
    uint64_t period = ss_config.stack_period, bytes = ss_config.stack_bytes;
    if (period == 0 && bytes == 0 && !ss_config.cpu_hz && !ss_config.wall_hz) return;
    /* libunwind only when asked for (STALLSCOPE_UNWINDER=libunwind, `run --unwinder libunwind`):
     * 20-50x faster, but where unwind tables are missing it guesses from frame pointers. */
    const char *which = ss_option_text(SS_OPT_UNWINDER);
    if (which && strcmp(which, "libunwind") == 0) {
        void *lu = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
        void *space = lu ? dlsym(lu, "_ULx86_64_local_addr_space") : NULL;
        int (*policy)(void *, int) = NULL;
        if (lu) *(void **)&policy = dlsym(lu, "_ULx86_64_set_caching_policy");
        if (lu) *(void **)&ss_unw_backtrace = dlsym(lu, "unw_backtrace");
        if (space && policy && ss_unw_backtrace) policy(*(void **)space, 2 /* UNW_CACHE_PER_THREAD */);
        else ss_unw_backtrace = NULL; /* libgcc's, then */
    }
    if (!ss_library_span) return; /* this library not found among the loaded objects (symbols.c) */
    uintptr_t lo = ss_library_lo, hi = ss_library_lo + ss_library_span;
    ss_self_lo = lo;
    ss_self_hi = hi;
    /* The fast unwinder (unwind.c), with libgcc's behind it for the frames it does not
     * understand where the program has libgcc loaded already. libgcc is mapped for the
     * interposer only where the fast one cannot work (no _dl_find_object, its tables not mapped,
     * or STALLSCOPE_FAST_UNWIND=0): opening it costs a program without it (a C program) a third
     * of the interposer's start-up, and five mappings every fork copies (docs/PERFORMANCE.md,
     * "A start's fixed cost"). */
    if (!ss_unw_backtrace) {
        if (dl_iterate_phdr(ss_libgcc_loaded_cb, NULL))
            ss_use_libgcc(dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD));
        ss_fast_unwind_init(lo, hi, !ss_unwind_backtrace);
        if (!ss_fast_unwind_on && !ss_unwind_backtrace) ss_use_libgcc(ss_open_libgcc());
        if (!ss_fast_unwind_on && !ss_unwind_backtrace) {
            ss_stacks_no_unwinder = 1;
            return;
        }
    }
    ss_sites = ss_map_wiped(SS_SITE_SLOTS * sizeof *ss_sites);
    ss_site_frames = ss_map_wiped((size_t)SS_SITE_SLOTS * SS_STACK_MAX_FRAMES * sizeof *ss_site_frames);
    ss_lock_sites = ss_map_wiped(SS_LOCK_SITE_SLOTS * sizeof *ss_lock_sites);
    ss_lock_site_ids = ss_map_wiped(SS_LOCK_SITE_SLOTS * sizeof *ss_lock_site_ids);
    if (!ss_lock_site_ids) ss_lock_sites = NULL; /* no lock stacks without both */
    ss_site_ids = ss_map_wiped(SS_SITE_SLOTS * sizeof *ss_site_ids);
    if (ss_py_init()) ss_site_py = ss_map_wiped((size_t)SS_SITE_PY_POOL * sizeof *ss_site_py);
    ss_lock_interval_ticks = (uint64_t)((unsigned __int128)SS_LOCK_STACK_INTERVAL_NS * ss_ticks_per_sec / 1000000000ull);
    if (!ss_sites || !ss_site_frames || !ss_site_ids) {
        /* A lock's stacks are in these tables (its init stack is taken without ss_stacks_on). */
        ss_lock_sites = NULL;
        return;
    }
    uint32_t timing = ss_config.period ? ss_config.period : 1;
    ss_stack_k = period == 0 ? 0 : (uint32_t)((period + timing - 1) / timing);
    if (ss_stack_k == 0 && period) ss_stack_k = 1;
    ss_count_q = period == 0 ? 0 : 1.0 / ((double)ss_stack_k * timing);
    ss_inv_mean_bytes = bytes == 0 ? 0 : 1.0 / (double)bytes;
    /* Warm the unwinder up (its first call may allocate and take the loader's lock). */
    if (ss_unw_backtrace) {
        void *raw[SS_STACK_MAX_FRAMES];
        ss_unw_backtrace(raw, SS_STACK_MAX_FRAMES);
    } else if (ss_unwind_backtrace) {
        uint64_t pcs[SS_STACK_MAX_FRAMES];
        struct ss_unwind u = {pcs, 0, 0};
        ss_unwind_backtrace(ss_unwind_cb, &u);
    }
    /* Know the objects loaded at start now: the stack scans of wall samples look them up. */
    if (ss_modules_try_lock(100)) {
        ss_modules_scan();
        ss_modules_unlock();
    }
    __atomic_store_n(&ss_stacks_on, 1, __ATOMIC_RELEASE);
    for (struct ss_thread *t = __atomic_load_n(&ss_threads, __ATOMIC_ACQUIRE); t; t = t->next)
        ss_stacks_thread_reset(t); /* only the main thread exists this early */
}

/* A fork child's file starts afresh. The site tables were zeroed by the kernel at fork
 * (MADV_WIPEONFORK); only without that are they cleared here, once the child records. */
void ss_stacks_child_setup(void) {
    if (!ss_stacks_on) return;
    if (!ss_wipe_works) {
        uint32_t claimed = __atomic_load_n(&ss_site_claimed, __ATOMIC_ACQUIRE);
        if (claimed) memset(ss_site_ids, 0, SS_SITE_SLOTS * sizeof *ss_site_ids);
        memset(ss_sites, 0, (claimed < SS_SITE_SLOTS ? claimed : SS_SITE_SLOTS) * sizeof *ss_sites);
        uint32_t locks = __atomic_load_n(&ss_lock_sites_claimed, __ATOMIC_ACQUIRE);
        if (ss_lock_sites && locks) {
            memset(ss_lock_site_ids, 0, SS_LOCK_SITE_SLOTS * sizeof *ss_lock_site_ids);
            memset(ss_lock_sites, 0, (locks < SS_LOCK_SITE_SLOTS ? locks : SS_LOCK_SITE_SLOTS) * sizeof *ss_lock_sites);
        }
    }
    ss_dropped = 0;
    ss_site_claimed = 0;
    ss_site_frames_used = 0;
    ss_site_py_used = 0;
    ss_py_file_reset(1);
    ss_lock_sites_claimed = 0;
    ss_modules_needed = 0;
    ss_modules_stale = 1; /* their written flags are the parent's: cleared once the child needs them */
    ss_modules_lock = 0;
}

/* Appends MODULE records for new objects, STACK records for new stacks and the ALLOC_SITES
 * record to the flush being assembled (called by ss_flush, which runs one at a time). */
int ss_stacks_write(int with_samples, int final) {
    if (!ss_stacks_on) return 0;
    /* The flusher of a process glibc believes single-threaded takes the loader's lock (the scan)
     * only while the program's thread waits for it: at the final flush (single.c). */
    int may_scan = final || !ss_on_flusher() || !ss_single_kept();
    /* Loaded objects are written once something in the file needs them (a stack, or a sample's
     * pc): a fork child that only exits needs none. Written in their order in the table, so
     * that a MODULE_GONE index is also their index in the file. */
    if (with_samples) ss_modules_needed = 1;
    if (__atomic_load_n(&ss_site_claimed, __ATOMIC_ACQUIRE)) ss_modules_needed = 1;
    if (ss_modules_needed && ss_modules_try_lock(1000)) {
        if (ss_modules_stale) {
            ss_modules_stale = 0;
            for (uint32_t i = 0; i < ss_nmodules; i++) ss_modules[i].written = ss_modules[i].gone_written = 0;
        }
        if (may_scan) ss_modules_scan();
        for (uint32_t i = 0; i < ss_nmodules; i++) {
            struct ss_module *m = &ss_modules[i];
            if (m->written) continue;
            struct ss_module_record r = {m->bias, m->lo, m->hi, m->seen, m->bid_len, (uint32_t)strlen(m->path)};
            if (ss_out_record3(SS_REC_MODULE, &r, sizeof r, m->bid, m->bid_len, m->path, r.path_len) != 0) {
                ss_modules_unlock();
                return -1;
            }
            m->written = 1;
        }
        for (uint32_t i = 0; i < ss_nmodules; i++) {
            struct ss_module *m = &ss_modules[i];
            if (!m->gone || m->gone_written) continue;
            struct ss_module_gone_record g = {i, 0, m->gone};
            if (ss_out_record(SS_REC_MODULE_GONE, &g, sizeof g, NULL, 0) != 0) {
                ss_modules_unlock();
                return -1;
            }
            m->gone_written = 1;
        }
        ss_modules_unlock();
    }
    if (ss_py_write_header() != 0) return -1;
    uint32_t count = 0, nlock = 0;
    uint32_t claimed = __atomic_load_n(&ss_site_claimed, __ATOMIC_ACQUIRE);
    if (claimed > SS_SITE_SLOTS) claimed = SS_SITE_SLOTS;
    for (uint32_t s = 0; s < claimed; s++) {
        struct ss_site *site = &ss_sites[s];
        if (!__atomic_load_n(&site->ready, __ATOMIC_ACQUIRE)) continue; /* being claimed: the next flush sees it */
        if (!site->written) {
            struct ss_stack_record r = {s, site->depth, site->first_mono_ns};
            if (ss_out_record(SS_REC_STACK, &r, sizeof r, ss_site_frames + site->pcs_at, site->depth * sizeof(uint64_t)) != 0)
                return -1;
            if (site->py_n && ss_py_write_stack(s, ss_site_py + site->py_at, site->py_n) != 0) return -1;
            site->written = 1;
        }
        if (site->fn < SS_FN_COUNT) count++;
    }
    uint32_t locks = ss_lock_sites ? __atomic_load_n(&ss_lock_sites_claimed, __ATOMIC_ACQUIRE) : 0;
    if (locks) { /* lock sites whose stack is in the file */
        static struct ss_lock_site lbuf[SS_LOCK_SITE_SLOTS];
        if (locks > SS_LOCK_SITE_SLOTS) locks = SS_LOCK_SITE_SLOTS;
        for (uint32_t i = 0; i < locks; i++) {
            struct ss_lock_site_slot *l = &ss_lock_sites[i];
            if (!__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE) || !ss_sites[l->stack].written) continue;
            uint64_t events = __atomic_load_n(&l->events, __ATOMIC_RELAXED);
            if (events == 0) continue;
            lbuf[nlock++] = (struct ss_lock_site){l->address, l->kind, l->role, l->stack, 0, events,
                                                  __atomic_load_n(&l->wait_ticks, __ATOMIC_RELAXED)};
        }
        struct ss_lock_sites_record lh = {nlock, 0, SS_LOCK_STACK_INTERVAL_NS};
        if (nlock && ss_out_record(SS_REC_LOCK_SITES, &lh, sizeof lh, lbuf, nlock * sizeof *lbuf) != 0) return -1;
    }
    if (count == 0) return 0;
    /* The sites go into one record: assemble it in the table's own spare pages. */
    static struct ss_alloc_site *buf;
    if (!buf) buf = ss_map_wiped(SS_SITE_SLOTS * sizeof *buf);
    if (!buf) return -1;
    uint32_t n = 0;
    for (uint32_t s = 0; s < claimed && n < count; s++) {
        struct ss_site *site = &ss_sites[s];
        if (!site->written || site->fn >= SS_FN_COUNT) continue;
        struct ss_alloc_site *a = &buf[n++];
        a->stack = s;
        a->fn = site->fn;
        a->samples = __atomic_load_n(&site->samples, __ATOMIC_RELAXED);
        a->sampled_bytes = __atomic_load_n(&site->sampled_bytes, __ATOMIC_RELAXED);
        a->weight_q16 = __atomic_load_n(&site->weight_q16, __ATOMIC_RELAXED);
        a->est_bytes = __atomic_load_n(&site->est_bytes, __ATOMIC_RELAXED);
        a->est_ticks = __atomic_load_n(&site->est_ticks, __ATOMIC_RELAXED);
    }
    struct ss_alloc_sites_record h = {n, ss_stack_k ? (uint32_t)(ss_stack_k * (ss_config.period ? ss_config.period : 1)) : 0,
                                      ss_config.stack_bytes, __atomic_load_n(&ss_dropped, __ATOMIC_RELAXED)};
    return ss_out_record(SS_REC_ALLOC_SITES, &h, sizeof h, buf, n * sizeof *buf);
}

/* A new window (attach.c) writes a new file: the stacks and sites of the last window are
 * cleared (only the slots it claimed: untouched pages stay untouched), and every loaded object
 * is written again once the file needs it. */
void ss_stacks_window_reset(void) {
    if (!ss_stacks_on) return;
    uint32_t claimed = __atomic_load_n(&ss_site_claimed, __ATOMIC_ACQUIRE);
    if (claimed > SS_SITE_SLOTS) claimed = SS_SITE_SLOTS;
    if (claimed) memset(ss_site_ids, 0, SS_SITE_SLOTS * sizeof *ss_site_ids);
    memset(ss_sites, 0, claimed * sizeof *ss_sites);
    uint32_t locks = ss_lock_sites ? __atomic_load_n(&ss_lock_sites_claimed, __ATOMIC_ACQUIRE) : 0;
    if (locks) {
        memset(ss_lock_site_ids, 0, SS_LOCK_SITE_SLOTS * sizeof *ss_lock_site_ids);
        memset(ss_lock_sites, 0, (locks < SS_LOCK_SITE_SLOTS ? locks : SS_LOCK_SITE_SLOTS) * sizeof *ss_lock_sites);
    }
    ss_dropped = 0;
    /* The frames first: a stack the new window takes never gets frames from the old count. */
    __atomic_store_n(&ss_site_frames_used, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_site_py_used, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_site_claimed, 0, __ATOMIC_RELEASE);
    ss_py_file_reset(0);
    ss_lock_sites_claimed = 0;
    ss_lock_init_taken = 0;
    ss_modules_needed = 0;
    ss_modules_stale = 1;
}
