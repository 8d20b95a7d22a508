/* OpenMP with GCC's libgomp (docs/STATES.md, "OpenMP"): its entry points, where the waits are
 * made. libgomp has no OMPT and on x86-64 sleeps with an inline `syscall` instruction, so neither
 * pthread's hooks nor syscall()'s see it; these do.
 *
 * - Parallel regions (GOMP_parallel and its combined loop and sections forms): the outlined body
 *   runs in each team member through a trampoline that times it; when the region ends, the
 *   master records it in its lock table (kind SS_LOCK_OMP_REGION, by the body's address): the
 *   team's time at the closing barrier is the team size times the region's wall time less the
 *   members' body time, which is the loop's load imbalance; the region's wall less the longest
 *   body is its fork-join cost.
 * - Critical sections and omp locks: each acquisition counted, its first step the hook's own
 *   where it is known to be the runtime's (a wait: the step found it taken; timed then, with the
 *   waiter's stack), else timed (a wait: over a microsecond); holds timed on the lock hooks'
 *   period; by the program's own .gomp_critical_user_<name> variable for a named section.
 *
 * An entry point the program never calls costs nothing; libomp (LLVM) exports the same GOMP_
 * names for GCC-built programs and is forwarded the same way. Nothing here allocates, locks or
 * calls stdio. */
#include "ss_hooks.h"

#include <dlfcn.h>
#include <string.h>

typedef void (*ss_omp_body_fn)(void *);

#define SS_OMP_SAMPLE_PERIOD 16u /* one short region in this many is timed (ss_omp_region_weight) */
#define SS_OMP_SHORT_US 20u       /* a body shorter than this on average is sampled */
#define SS_OMP_SAMPLED_CAP_US (8u * SS_OMP_SHORT_US) /* a sampled run's times are capped at this */

/* ---- which runtime a call goes to ----
 * Each hook forwards to the function the calling object's reference would have been bound to
 * without the interposer (symbols.c, ss_runtime_symbol: the global scope, then the caller's own):
 * two copies of libgomp, each loaded with RTLD_LOCAL by its own plugin (Python wheels bundle it
 * under names of their own), each get their own plugin's calls. Never found with dlsym, whose
 * lock a constructor running a region holds. An answer is kept as a route: the function and the
 * callers it holds for (every caller when the global scope had it, else the caller's object); a
 * hook's variable points at the route it used last, the table keeps the others. A route whose
 * runtime or caller a dlclose unloaded is retired (ss_omp_after_unload): libgomp is not NODELETE,
 * and a plugin closed and opened again may bring it back at another address. */
struct ss_omp_route {
    const void *hook; /* the hook's variable: whose route this is (NULL while it is filled in) */
    void *fn;
    uintptr_t lo, span; /* the callers it holds for: lo <= caller < lo + span (0: retired) */
};
typedef const struct ss_omp_route *ss_omp_route_ptr;

#define SS_OMP_ROUTES 512u
static struct ss_omp_route ss_omp_routes[SS_OMP_ROUTES];
static uint32_t ss_omp_nroutes;

static inline uintptr_t ss_omp_caller(uintptr_t ra);

static SS_NOINLINE void *ss_omp_route_slow(ss_omp_route_ptr *var, const char *name, uintptr_t caller) {
    static const char *const runtimes[] = {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so", NULL};
    caller = ss_omp_caller(caller);
    uint32_t n = __atomic_load_n(&ss_omp_nroutes, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < SS_OMP_ROUTES; i++) {
        struct ss_omp_route *e = &ss_omp_routes[i];
        if (__atomic_load_n(&e->hook, __ATOMIC_ACQUIRE) != var) continue;
        if (caller - e->lo < __atomic_load_n(&e->span, __ATOMIC_RELAXED)) {
            __atomic_store_n(var, e, __ATOMIC_RELEASE);
            return e->fn;
        }
    }
    uintptr_t lo, hi;
    void *f = ss_runtime_symbol(name, runtimes, caller, &lo, &hi);
    if (!f) return NULL;
    /* A route this hook had retired is used again (a plugin closed and opened a thousand times
     * must not fill the table): claimed by tagging its hook, filled, its span stored last. A
     * thread still holding it could only have been called from an object that is gone. */
    struct ss_omp_route *e = NULL;
    for (uint32_t i = 0; i < n && i < SS_OMP_ROUTES && !e; i++) {
        const void *mine = var;
        struct ss_omp_route *r = &ss_omp_routes[i];
        if (__atomic_load_n(&r->span, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&r->hook, &mine, (const void *)((uintptr_t)var | 1), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            e = r;
    }
    if (!e) {
        uint32_t i = __atomic_fetch_add(&ss_omp_nroutes, 1, __ATOMIC_ACQ_REL);
        if (i >= SS_OMP_ROUTES) return f; /* not kept: found again at each call */
        e = &ss_omp_routes[i];
    }
    __atomic_store_n(&e->fn, f, __ATOMIC_RELAXED);
    __atomic_store_n(&e->lo, lo, __ATOMIC_RELAXED);
    __atomic_store_n(&e->span, hi - lo, __ATOMIC_RELEASE);
    __atomic_store_n(&e->hook, (const void *)var, __ATOMIC_RELEASE);
    __atomic_store_n(var, e, __ATOMIC_RELEASE);
    return f;
}

/* The runtime's function `name` for the hook whose variable is `var`, called from `caller`. */
static inline void *ss_omp_route(ss_omp_route_ptr *var, const char *name, uintptr_t caller) {
    ss_omp_route_ptr e = __atomic_load_n(var, __ATOMIC_ACQUIRE);
    if (SS_LIKELY(e && caller - e->lo < __atomic_load_n(&e->span, __ATOMIC_RELAXED))) return e->fn;
    return ss_omp_route_slow(var, name, caller);
}

/* The route `var` holds for `caller` (NULL: another, or none yet): for the fast parts. */
static inline ss_omp_route_ptr ss_omp_route_held(ss_omp_route_ptr *var, uintptr_t caller) {
    ss_omp_route_ptr e = __atomic_load_n(var, __ATOMIC_ACQUIRE);
    return e && caller - e->lo < __atomic_load_n(&e->span, __ATOMIC_RELAXED) ? e : NULL;
}

/* The caller of the region whose body this thread runs through the trampoline (ss_omp_body), 0
 * when none: a body that ends with a tail call (GCC's `jmp GOMP_critical_end` after a critical
 * section) returns into the trampoline, which stands for the body's own object. */
static SS_TLS uintptr_t ss_omp_body_caller;

static inline uintptr_t ss_omp_caller(uintptr_t ra) {
    if (SS_UNLIKELY(ra - ss_library_lo < ss_library_span) && ss_omp_body_caller) return ss_omp_body_caller;
    return ra;
}

/* A hook's return address; the slow part stands the body's caller for the trampoline's
 * (ss_omp_caller), the fast parts compare it as it is: a route for every caller holds for it. */
#define SS_CALLER ((uintptr_t)__builtin_return_address(0))
/* The function a hook forwards to, typed: `type` is its pointer type. */
#define SS_OMP_FN(type, name, caller) ((type)ss_omp_route(&ss_route_##name, #name, caller))

/* The OpenMP part of a node, for a new thread (ss_thread_reset, threads.c). */
void ss_omp_thread_reset(struct ss_thread *t) {
    t->omp.run = (struct ss_omp_run){0};
    /* Regions are told apart by number, their slots on a stack that may hold an older number:
     * a random start makes a stale match of another thread's numbers practically impossible. */
    t->omp.region_seq = t->rng << 16;
    t->omp.countdown = ss_next_interval_of(t, SS_OMP_SAMPLE_PERIOD);
    t->omp.last_team = 0;
    t->omp.in_gomp_call = 0;
}

/* ---- parallel regions ---- */

/* Each team member below SS_OMP_SLOTS (by omp_get_thread_num) writes its body time into a cache
 * line of its own, tagged with the region's number: the members of a small region then share no
 * line they write (three atomic operations per member on one shared line would make the line
 * travel between the cores several times per region, in a program of many small regions).
 * The others add to the shared totals with atomics. The master reads the slots after
 * the region's closing barrier, which orders the members' stores before its reads. */
#define SS_OMP_SLOTS 16u
struct ss_omp_slot {
    _Alignas(64) uint64_t seq; /* the region's number once written (the stack may hold an old one) */
    uint64_t ticks;
};

struct ss_omp_region {
    ss_omp_body_fn fn;
    void *data;
    int (*thread_num)(void); /* the runtime's omp_get_thread_num: the copy that runs the region */
    uintptr_t caller;        /* of the region's entry point (ss_omp_body_caller) */
    uint64_t seq;
    uint64_t body_ticks; /* of members without a slot, summed */
    uint64_t longest;    /* the longest of those */
    uint32_t members;    /* those */
    struct ss_omp_slot slot[SS_OMP_SLOTS];
};

static ss_omp_route_ptr ss_route_omp_get_thread_num;

/* Runs one team member's share of the region, timed. */
static void ss_omp_body(void *p) {
    struct ss_omp_region *r = p;
    uintptr_t outer = ss_omp_body_caller;
    ss_omp_body_caller = r->caller;
    uint64_t start = ss_ticks();
    r->fn(r->data);
    uint64_t ticks = ss_ticks() - start;
    ss_omp_body_caller = outer;
    int i = r->thread_num ? r->thread_num() : -1;
    if (i >= 0 && (unsigned)i < SS_OMP_SLOTS) {
        r->slot[i].ticks = ticks;
        __atomic_store_n(&r->slot[i].seq, r->seq, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&r->body_ticks, ticks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->members, 1, __ATOMIC_RELAXED);
    uint64_t seen = __atomic_load_n(&r->longest, __ATOMIC_RELAXED);
    while (ticks > seen && !__atomic_compare_exchange_n(&r->longest, &seen, ticks, 1, __ATOMIC_RELAXED,
                                                        __ATOMIC_RELAXED)) {
    }
}

/* Regions closer than this in time are one run on the timeline: a run per region would flood the
 * wait ring (and lose real waits) in a program of many tiny regions. */
#define SS_OMP_RUN_GAP_US 1000u

static void ss_run_close(struct ss_thread *t, struct ss_omp_run *run) {
    if (!run->count) return;
    ss_wait_region(t, run);
    run->count = 0;
}

SS_FORK_TEXT void ss_omp_run_close(struct ss_thread *t) {
    if (!t) return;
    ss_run_close(t, &t->omp.run);
    ss_run_close(t, &t->itt.tbb_run);
}

/* Whether a region that starts at `start` (ticks) belongs to the open run `run`. */
static inline int ss_run_goes_on(const struct ss_omp_run *run, uint64_t start) {
    return run->count && run->count != UINT32_MAX && start <= run->end_ticks + ss_us_to_ticks(SS_OMP_RUN_GAP_US);
}

/* Adds a region of [start, end) (ticks) to `run`, or closes the run and opens another. A run is
 * named by the body of its longest region. */
void ss_run_add(struct ss_thread *t, struct ss_omp_run *run, uint8_t kind, uint64_t body, uint64_t start,
                uint64_t end, uint64_t team_ticks, uint64_t body_ticks) {
    uint64_t wall = end > start ? end - start : 0;
    if (run->count && !ss_run_goes_on(run, start)) ss_run_close(t, run);
    if (!run->count) *run = (struct ss_omp_run){body, start, end, 0, 0, 0, 0, kind};
    if (wall >= run->longest_ticks) {
        run->longest_ticks = wall;
        run->body = body;
    }
    run->end_ticks = end;
    run->team_ticks += team_ticks;
    run->body_ticks += body_ticks;
    run->count++;
}

static void ss_omp_region_into(struct ss_thread *t, struct ss_lock_stats *l, const void *region, uint32_t members,
                               uint64_t wall, uint64_t barrier, uint64_t fork_join, uint64_t end, uint32_t weight);

/* The master records a region that ended at `end`, `wall` ticks from its start, timed with
 * `weight` (ss_omp_region_weight), into its body's entry `l`. */
static void ss_omp_region_done(struct ss_thread *t, struct ss_lock_stats *l, const struct ss_omp_region *r,
                               uint64_t wall, uint64_t end, uint32_t weight) {
    uint32_t members = __atomic_load_n(&r->members, __ATOMIC_RELAXED);
    uint64_t body = __atomic_load_n(&r->body_ticks, __ATOMIC_RELAXED);
    uint64_t longest = __atomic_load_n(&r->longest, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < SS_OMP_SLOTS; i++) {
        if (__atomic_load_n(&r->slot[i].seq, __ATOMIC_RELAXED) != r->seq) continue;
        uint64_t ticks = r->slot[i].ticks;
        members++;
        body += ticks;
        if (ticks > longest) longest = ticks;
    }
    uint64_t team = (uint64_t)members * wall;
    uint64_t barrier = team > body ? team - body : 0, fork_join = wall > longest ? wall - longest : 0;
    t->omp.last_team = members;
    /* A sampled run stands for SS_OMP_SAMPLE_PERIOD runs of a short body: one that lasted many
     * times the short bound was almost certainly preempted, and would count that many times
     * over. Its times are scaled down to the cap, keeping their proportions (so the shares are
     * the run's own): a bias for a body whose runs really vary that much, which is accepted, as
     * for sampled allocator calls (alloc.c, ss_sampled_ticks). */
    uint64_t cap = ss_us_to_ticks(SS_OMP_SAMPLED_CAP_US);
    if (weight > 1 && wall > cap && cap > 0) {
        barrier = (uint64_t)((unsigned __int128)barrier * cap / wall);
        fork_join = (uint64_t)((unsigned __int128)fork_join * cap / wall);
        end -= wall - cap; /* the run's time on the timeline as timed, its start kept */
        wall = cap;
    }
    ss_omp_region_into(t, l, (const void *)r->fn, members, wall, barrier, fork_join, end, weight);
}

/* One run of a region, in the master's lock table (kind SS_LOCK_OMP_REGION by its body, or
 * SS_LOCK_OMP_REGION_SITE by its call site: ss_format.h): its team, wall time, the team's time at
 * the closing barrier and its fork-join cost. Shared with the OMPT tool (ompt.c). */
void ss_omp_region_record(struct ss_thread *t, const void *region, uint32_t kind, uint32_t members, uint64_t wall,
                          uint64_t barrier, uint64_t fork_join, uint64_t end, uint32_t weight) {
    ss_omp_region_into(t, &t->locks.table[ss_lock_slot_for(t, region, kind)], region, members, wall, barrier,
                       fork_join, end, weight);
}

/* The same, into the region's entry `l` of the master's lock table. */
static void ss_omp_region_into(struct ss_thread *t, struct ss_lock_stats *l, const void *region, uint32_t members,
                               uint64_t wall, uint64_t barrier, uint64_t fork_join, uint64_t end, uint32_t weight) {
    SS_ADD(l->acquisitions, 1);
    SS_ADD(l->contended, members);
    SS_ADD(l->wait_ticks, barrier * weight);
    SS_ADD(l->max_wait_ticks, fork_join * weight); /* fork-join, summed */
    SS_ADD(l->timed_holds, weight);
    SS_ADD(l->hold_ticks, wall * weight);
    uint64_t team = (uint64_t)members * wall;
    ss_run_add(t, &t->omp.run, SS_LOCK_OMP_REGION, (uint64_t)(uintptr_t)region, end - wall, end, team * weight,
               (team > barrier ? team - barrier : 0) * weight);
}

/* Short regions are timed on a sample. A region costs the trampoline two clock reads per member,
 * its slot, and the master's record: about 100 ns, which a program of regions of a microsecond
 * would pay in full (1.17x on 300,000 regions of 0.7 us). So a region is timed (weight 1)
 * while its body has run fewer than SS_OMP_ALWAYS_RUNS times on this master or has lasted
 * SS_OMP_SHORT_US or more on average, and otherwise one in SS_OMP_SAMPLE_PERIOD is timed (at
 * random intervals) and stands for that many (its wall, barrier and fork-join times are
 * multiplied by the weight, and its hold count is the weight: the report's estimates are then
 * sums over the sample, as for lock holds). Which stratum a run falls in depends only on the
 * runs before it, so the sums stay unbiased. Every run is counted; an untimed one adds the team
 * of the last timed one to the members, and joins the timeline's run at its start (one clock read,
 * no time of its own). With `--timing exact` every region is timed. Returns the weight, 0 for a
 * region run untimed. */
#define SS_OMP_ALWAYS_RUNS 64u
static inline uint32_t ss_omp_region_weight(struct ss_thread *t, const struct ss_lock_stats *l) {
    if (ss_config.timing == SS_TIMING_EXACT || l->acquisitions < SS_OMP_ALWAYS_RUNS ||
        l->hold_ticks >= l->timed_holds * ss_us_to_ticks(SS_OMP_SHORT_US))
        return 1;
    if (--t->omp.countdown != 0) return 0;
    t->omp.countdown = ss_next_interval_of(t, SS_OMP_SAMPLE_PERIOD);
    return SS_OMP_SAMPLE_PERIOD;
}

/* A region run untimed (weight 0): counted in its entry `l`, with the last timed team, and on
 * the timeline at its start. Inline, as the slot's lookup: the master pays it between regions
 * while the team waits (in a program of regions of a microsecond, every nanosecond counts). */
static inline void ss_omp_region_untimed(struct ss_thread *t, struct ss_lock_stats *l, const void *region) {
    SS_ADD(l->acquisitions, 1);
    SS_ADD(l->contended, t->omp.last_team);
    uint64_t at = ss_ticks();
    struct ss_omp_run *run = &t->omp.run;
    /* ss_run_add's common case, in place: the run goes on, and a region of no time of its own
     * leaves its longest (and so its name) as they are. */
    if (SS_LIKELY(ss_run_goes_on(run, at) && run->longest_ticks)) {
        run->end_ticks = at;
        run->count++;
        return;
    }
    ss_run_add(t, run, SS_LOCK_OMP_REGION, (uint64_t)(uintptr_t)region, at, at, 0, 0);
}

/* The body's entry in the master's lock table: the one it used last for a region, or found. */
static inline struct ss_lock_stats *ss_omp_region_slot(struct ss_thread *t, const void *body) {
    const struct ss_last_lock *last = &t->locks.last[SS_LOCK_OMP_REGION];
    if (SS_LIKELY(last->address == (uintptr_t)body)) return last->slot;
    return &t->locks.table[ss_lock_slot_for(t, body, SS_LOCK_OMP_REGION)];
}

#define SS_UNPAREN(...) __VA_ARGS__ /* a parenthesised list, without its parentheses */

/* A region entry point: the body through the trampoline, the region recorded at its end. LLVM's
 * libomp, which answers these names for GCC-built code, reports the region to its OMPT tool too,
 * with this hook's return address as the call site: the tool (ompt.c) leaves such regions to
 * this, so that each is counted once, by its body. The timed part is a function of its own: the
 * untimed one, most of a program of short regions, then sets up no frame for the region's slots
 * (a kilobyte, aligned to cache lines). */
#define SS_OMP_PARALLEL(name, params, args)                                                                   \
    static ss_omp_route_ptr ss_route_##name;                                                                  \
    static SS_NOINLINE void ss_omp_timed_##name(struct ss_thread *t, struct ss_lock_stats *slot_, uint32_t weight_, \
                                                uintptr_t caller_, void(*real_) params, SS_UNPAREN params) {  \
        struct ss_omp_region r; /* its slots are told by seq, not cleared */                                  \
        r.fn = fn;                                                                                            \
        r.data = data;                                                                                        \
        r.thread_num = SS_OMP_FN(int (*)(void), omp_get_thread_num, caller_);                                 \
        r.caller = caller_;                                                                                   \
        r.seq = ++t->omp.region_seq;                                                                          \
        r.body_ticks = r.longest = 0;                                                                         \
        r.members = 0;                                                                                        \
        ss_omp_body_fn body = fn;                                                                             \
        fn = ss_omp_body;                                                                                     \
        data = &r;                                                                                            \
        uint64_t start = ss_ticks();                                                                          \
        real_ args;                                                                                           \
        uint64_t end_ = ss_ticks();                                                                           \
        r.fn = body;                                                                                          \
        ss_omp_region_done(t, slot_, &r, end_ - start, end_, weight_);                                        \
    }                                                                                                         \
    SS_EXPORT void name params {                                                                              \
        uintptr_t caller_ = SS_CALLER;                                                                        \
        void(*real_) params = SS_OMP_FN(void(*) params, name, caller_);                                       \
        struct ss_thread *t = ss_self_known();                                                                \
        if (!t || !ss_active || !fn) {                                                                        \
            real_ args;                                                                                       \
            return;                                                                                           \
        }                                                                                                     \
        struct ss_lock_stats *slot_ = ss_omp_region_slot(t, (const void *)fn);                                \
        uint32_t weight_ = ss_omp_region_weight(t, slot_);                                                    \
        if (!weight_) { /* counted, run as it is */                                                           \
            ss_omp_region_untimed(t, slot_, (const void *)fn);                                                \
            real_ args;                                                                                       \
            return;                                                                                           \
        }                                                                                                     \
        ss_omp_timed_##name(t, slot_, weight_, caller_, real_, SS_UNPAREN args);                              \
    }

SS_OMP_PARALLEL(GOMP_parallel, (ss_omp_body_fn fn, void *data, unsigned n, unsigned flags), (fn, data, n, flags))
SS_OMP_PARALLEL(GOMP_parallel_sections, (ss_omp_body_fn fn, void *data, unsigned n, unsigned count, unsigned flags),
                (fn, data, n, count, flags))
#define SS_OMP_LOOP(name)                                                                                     \
    SS_OMP_PARALLEL(name,                                                                                     \
                    (ss_omp_body_fn fn, void *data, unsigned n, long start_, long end, long incr, long chunk,  \
                     unsigned flags),                                                                         \
                    (fn, data, n, start_, end, incr, chunk, flags))
#define SS_OMP_LOOP_RUNTIME(name)                                                                             \
    SS_OMP_PARALLEL(name,                                                                                     \
                    (ss_omp_body_fn fn, void *data, unsigned n, long start_, long end, long incr, unsigned flags), \
                    (fn, data, n, start_, end, incr, flags))
SS_OMP_LOOP(GOMP_parallel_loop_static)
SS_OMP_LOOP(GOMP_parallel_loop_dynamic)
SS_OMP_LOOP(GOMP_parallel_loop_guided)
SS_OMP_LOOP(GOMP_parallel_loop_nonmonotonic_dynamic)
SS_OMP_LOOP(GOMP_parallel_loop_nonmonotonic_guided)
SS_OMP_LOOP_RUNTIME(GOMP_parallel_loop_runtime)
SS_OMP_LOOP_RUNTIME(GOMP_parallel_loop_nonmonotonic_runtime)
SS_OMP_LOOP_RUNTIME(GOMP_parallel_loop_maybe_nonmonotonic_runtime)

/* ---- critical sections and omp locks ---- */

/* The object of the unnamed critical section (libgomp's own lock, whose address is private). */
#define SS_OMP_UNNAMED ((const void *)1)

/* An acquisition made by `call` of `object`, timed (locks.c's ss_runtime_acquired records it). */
#define SS_OMP_ACQUIRE(t, object, kind, call, found_held)                                                     \
    do {                                                                                                      \
        uint64_t start_ = ss_ticks();                                                                         \
        call;                                                                                                 \
        uint64_t end_ = ss_ticks();                                                                           \
        ss_runtime_acquired(t, object, kind, end_ - start_, end_, found_held);                                \
    } while (0)

/* The same, after a first step `try` (nonzero: taken): taken, the acquisition waited for nothing,
 * reads no clock and adds an increment to its hold (the object's slot is found before the step);
 * found taken, the runtime's call that follows (its own step again, its spin and sleep) is a
 * contended acquisition, timed however short. Returns from the hook either way. */
#define SS_OMP_ACQUIRE_STEPPED(t, object, kind, try, call)                                                    \
    do {                                                                                                      \
        struct ss_lock_stats *l_ = ss_runtime_slot_cached(t, object, kind);                                   \
        if (try) {                                                                                            \
            ss_runtime_took(t, object, l_);                                                                   \
            return;                                                                                           \
        }                                                                                                     \
        uint64_t start_ = ss_ticks();                                                                         \
        call;                                                                                                 \
        uint64_t end_ = ss_ticks();                                                                           \
        ss_runtime_waited(t, object, kind, l_, end_ - start_, end_, 1);                                       \
        return;                                                                                               \
    } while (0)

/* A GOMP_critical_* hook's call of the runtime (t->omp.in_gomp_call). */
#define SS_GOMP_CALL(t, call)                                                                                 \
    do {                                                                                                      \
        (t)->omp.in_gomp_call = 1;                                                                            \
        call;                                                                                                 \
        (t)->omp.in_gomp_call = 0;                                                                            \
    } while (0)

static ss_omp_route_ptr ss_route_GOMP_critical_start, ss_route_GOMP_critical_end, ss_route_GOMP_critical_name_start,
    ss_route_GOMP_critical_name_end;
typedef void (*ss_gomp_unnamed_fn)(void);
typedef void (*ss_gomp_named_fn)(void **);

/* libgomp's critical sections are its mutexes (an int: 0 free, 1 taken, -1 taken with waiters),
 * and its acquisition's first step is a compare-and-swap of 0 to 1: GOMP_critical_start's on its
 * private default lock, GOMP_critical_name_start's on the program's pointer slot, where the word
 * lives when it fits. The hooks take that step themselves (two clock reads around every
 * acquisition would make a program of short critical sections 5x slower), only where checked once,
 * for the copy of the runtime the first caller's calls go to (another copy's calls are timed):
 * the default lock's address is the one GOMP_critical_start's compare-and-swap names and
 * GOMP_critical_end's exchange names too; a named section's word is checked, where the default
 * lock was found, by libgomp taking and releasing a zeroed slot of our own (64 bytes: a runtime
 * with a lock object of its own there, as libomp's 32 bytes, writes other bytes and fails the
 * check). Elsewhere every acquisition is timed. The functions checked are kept: a call whose
 * route leads to them takes the steps. */
static int *ss_gomp_default_lock;
static void *ss_gomp_default_start, *ss_gomp_default_end; /* checked and found (NULL: no steps) */
static void *ss_gomp_named_start, *ss_gomp_named_end;
static int ss_omp_test_steps; /* omp locks: omp_test_lock first */
static int ss_gomp_steps_state; /* 0: not checked, 1: checking, 2: checked */

static inline int ss_gomp_step(int *word) {
    int expected = 0;
    return __atomic_compare_exchange_n(word, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The address an instruction of `fn`'s first 32 bytes names RIP-relative: `lock cmpxchg r32, m32`
 * (F0 0F B1 /r) or `xchg r32, m32` (87 /r), by `opcode` (the bytes before the ModRM byte). */
static const void *ss_rip_operand(const void *fn, const unsigned char *opcode, size_t n) {
    const unsigned char *p = fn;
    for (size_t i = 0; i + n + 5 <= 32; i++) {
        if (memcmp(p + i, opcode, n) != 0 || (p[i + n] & 0xC7) != 0x05) continue;
        int32_t disp;
        memcpy(&disp, p + i + n + 1, sizeof disp);
        return p + i + n + 5 + disp;
    }
    return NULL;
}

static void ss_gomp_steps_check(struct ss_thread *t, uintptr_t caller) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&ss_gomp_steps_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    if (!ss_option_num(SS_OPT_LOCK_STEPS)) { /* every acquisition timed (comparisons) */
        __atomic_store_n(&ss_gomp_steps_state, 2, __ATOMIC_RELEASE);
        return;
    }
    ss_omp_test_steps = 1;
    ss_gomp_unnamed_fn start = SS_OMP_FN(ss_gomp_unnamed_fn, GOMP_critical_start, caller);
    ss_gomp_unnamed_fn end = SS_OMP_FN(ss_gomp_unnamed_fn, GOMP_critical_end, caller);
    ss_gomp_named_fn name_start = SS_OMP_FN(ss_gomp_named_fn, GOMP_critical_name_start, caller);
    ss_gomp_named_fn name_end = SS_OMP_FN(ss_gomp_named_fn, GOMP_critical_name_end, caller);
    int *lock = NULL;
    if (start && end) {
        static const unsigned char cmpxchg[] = {0xF0, 0x0F, 0xB1}, xchg[] = {0x87};
        const void *word = ss_rip_operand((const void *)start, cmpxchg, sizeof cmpxchg);
        /* in libgomp's own segments (by the loaded objects' list, not dladdr: the loader's lock
         * that dladdr takes is held by a thread running a library's constructor) */
        const char *in = word ? ss_object_path(word) : NULL;
        const char *gomp = ss_object_path((const void *)start);
        if (word && word == ss_rip_operand((const void *)end, xchg, sizeof xchg) && in && gomp && strcmp(in, gomp) == 0)
            lock = (int *)word;
    }
    /* Only where the default lock was found (libgomp's code): libomp is not called for the check */
    int named = 0;
    if (lock && name_start && name_end) {
        static _Alignas(64) unsigned char slot[64];
        SS_GOMP_CALL(t, name_start((void **)slot)); /* not the program's */
        int word;
        memcpy(&word, slot, sizeof word);
        int taken = word == 1;
        for (size_t i = sizeof word; i < sizeof slot; i++) taken &= slot[i] == 0;
        SS_GOMP_CALL(t, name_end((void **)slot));
        int released = 1;
        for (size_t i = 0; i < sizeof slot; i++) released &= slot[i] == 0;
        named = taken && released;
    }
    ss_gomp_default_lock = lock;
    __atomic_store_n(&ss_gomp_default_start, lock ? (void *)start : NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_default_end, lock ? (void *)end : NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_named_start, named ? (void *)name_start : NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_named_end, named ? (void *)name_end : NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_steps_state, 2, __ATOMIC_RELEASE);
}

/* After a dlclose: the routes whose runtime or caller is gone are retired (found again at their
 * next call), and libgomp's steps checked again when the copy checked is gone (its default lock
 * was in it). A thread cannot be in an object that was unloaded. */
void ss_omp_after_unload(void) {
    uint32_t n = __atomic_load_n(&ss_omp_nroutes, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < SS_OMP_ROUTES; i++) {
        struct ss_omp_route *e = &ss_omp_routes[i];
        if (!__atomic_load_n(&e->hook, __ATOMIC_ACQUIRE) || !__atomic_load_n(&e->span, __ATOMIC_RELAXED)) continue;
        int global = e->span == UINTPTR_MAX && e->lo == 0;
        if (!ss_object_path(e->fn) || (!global && !ss_object_path((const void *)e->lo)))
            __atomic_store_n(&e->span, 0, __ATOMIC_RELEASE);
    }
    void *checked = __atomic_load_n(&ss_gomp_default_start, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&ss_gomp_steps_state, __ATOMIC_ACQUIRE) != 2 || !checked || ss_object_path(checked)) return;
    __atomic_store_n(&ss_gomp_default_start, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_default_end, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_named_start, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&ss_gomp_named_end, NULL, __ATOMIC_RELEASE);
    ss_gomp_default_lock = NULL;
    __atomic_store_n(&ss_gomp_steps_state, 0, __ATOMIC_RELEASE);
}

/* Whether the steps are known (checking them the first time). */
static inline int ss_gomp_steps_known(struct ss_thread *t, uintptr_t caller) {
    if (SS_LIKELY(__atomic_load_n(&ss_gomp_steps_state, __ATOMIC_ACQUIRE) == 2)) return 1;
    ss_gomp_steps_check(t, caller);
    return __atomic_load_n(&ss_gomp_steps_state, __ATOMIC_ACQUIRE) == 2;
}

/* The route `var` holds for `caller` when it leads to the function checked for the steps (NULL:
 * another route, none yet, or no steps): the fast parts of the critical sections. */
static inline ss_omp_route_ptr ss_gomp_checked_route(ss_omp_route_ptr *var, uintptr_t caller, void **checked) {
    ss_omp_route_ptr e = ss_omp_route_held(var, caller);
    return e && e->fn == __atomic_load_n(checked, __ATOMIC_ACQUIRE) ? e : NULL;
}

/* A libgomp critical section's acquisition has two parts, as the pthread lock hooks' (locks.c): the
 * fast part, inline in the exported function (the caller's route leads to the checked function,
 * the section's slot the one the thread used last, the step taken, the hold not timed: an
 * increment, no stack frame), and the slow part, everything else, told whether the fast part
 * tried the step and found the section taken (`tried`: it is not tried again). What the hooks
 * add around the acquisition moves the hand-over between threads (docs/PERFORMANCE.md,
 * "Faithfulness"). */
#define SS_GOMP_CRITICAL_START(name, decl, ptr, object, word, checked, fn_type, call_args)                     \
    static SS_NOINLINE void ss_slow_##name(void **pptr, struct ss_thread *t, int tried, uintptr_t caller) {  \
        (void)pptr;                                                                                           \
        fn_type real_ = SS_OMP_FN(fn_type, name, caller);                                                     \
        if (!t || !ss_active) return real_ call_args;                                                         \
        if (tried || (ss_gomp_steps_known(t, caller) && (void *)real_ == __atomic_load_n(&checked, __ATOMIC_ACQUIRE))) \
            SS_OMP_ACQUIRE_STEPPED(t, object, SS_LOCK_OMP_CRITICAL, !tried && ss_gomp_step(word),             \
                                   SS_GOMP_CALL(t, real_ call_args));                                         \
        SS_OMP_ACQUIRE(t, object, SS_LOCK_OMP_CRITICAL, SS_GOMP_CALL(t, real_ call_args), 0);                 \
    }                                                                                                         \
    SS_EXPORT void name decl {                                                                                \
        uintptr_t caller_ = SS_CALLER;                                                                        \
        struct ss_thread *t = ss_self_known();                                                                \
        void **pptr = ptr;                                                                                    \
        if (SS_LIKELY(t && ss_active && ss_gomp_checked_route(&ss_route_##name, caller_, &(checked))) &&       \
            SS_LIKELY(t->locks.last[SS_LOCK_OMP_CRITICAL].address == (uintptr_t)(object))) {                  \
            if (SS_UNLIKELY(!ss_gomp_step(word))) return ss_slow_##name(pptr, t, 1, caller_);                 \
            ss_runtime_took(t, (object), t->locks.last[SS_LOCK_OMP_CRITICAL].slot);                           \
            return;                                                                                           \
        }                                                                                                     \
        return ss_slow_##name(pptr, t, 0, caller_);                                                           \
    }

/* A release: libgomp's own function, by a tail call where nothing is to be done (no timed hold
 * open, the caller's route leads to the checked function, whose release calls nothing of the
 * hooks'). */
#define SS_GOMP_CRITICAL_END(name, decl, ptr, object, checked, fn_type, call_args)                            \
    static SS_NOINLINE void ss_slow_##name(void **pptr, struct ss_thread *t, uintptr_t caller) {             \
        (void)pptr;                                                                                           \
        fn_type real_ = SS_OMP_FN(fn_type, name, caller);                                                     \
        if (!t) return real_ call_args;                                                                       \
        if (t->locks.nheld) ss_runtime_releasing(t, object);                                                  \
        SS_GOMP_CALL(t, real_ call_args);                                                                     \
    }                                                                                                         \
    SS_EXPORT void name decl {                                                                                \
        uintptr_t caller_ = SS_CALLER;                                                                        \
        struct ss_thread *t = ss_self_known();                                                                \
        void **pptr = ptr;                                                                                    \
        ss_omp_route_ptr route_ = ss_gomp_checked_route(&ss_route_##name, caller_, &(checked));                \
        if (SS_LIKELY(t && !t->locks.nheld && route_)) return ((fn_type)route_->fn) call_args;                \
        return ss_slow_##name(pptr, t, caller_);                                                              \
    }

SS_GOMP_CRITICAL_START(GOMP_critical_start, (void), NULL, SS_OMP_UNNAMED, ss_gomp_default_lock, ss_gomp_default_start,
                       ss_gomp_unnamed_fn, ())
SS_GOMP_CRITICAL_END(GOMP_critical_end, (void), NULL, SS_OMP_UNNAMED, ss_gomp_default_end, ss_gomp_unnamed_fn, ())
SS_GOMP_CRITICAL_START(GOMP_critical_name_start, (void **pptr_), pptr_, pptr, (int *)pptr, ss_gomp_named_start,
                       ss_gomp_named_fn, (pptr))
SS_GOMP_CRITICAL_END(GOMP_critical_name_end, (void **pptr_), pptr_, pptr, ss_gomp_named_end, ss_gomp_named_fn, (pptr))

/* omp_lock_t and omp_nest_lock_t are opaque: the program's object's address names them, and an
 * acquisition's first step is the runtime's own try (omp_test_lock: in libgomp and libomp the
 * same step as the set's fast path). */
#define SS_OMP_LOCK_PAIR(set, test, unset)                                                                    \
    static ss_omp_route_ptr ss_route_##set, ss_route_##test, ss_route_##unset;                               \
    SS_EXPORT void set(void *lock) {                                                                          \
        uintptr_t caller_ = SS_CALLER;                                                                        \
        void (*real_)(void *) = SS_OMP_FN(void (*)(void *), set, caller_);                                    \
        struct ss_thread *t = ss_self_known();                                                                \
        if (!t || !ss_active) return real_(lock);                                                             \
        int (*try_)(void *) = SS_OMP_FN(int (*)(void *), test, caller_);                                      \
        if (ss_gomp_steps_known(t, caller_) && ss_omp_test_steps && try_)                                     \
            SS_OMP_ACQUIRE_STEPPED(t, lock, SS_LOCK_OMP_LOCK, try_(lock) > 0, real_(lock));                   \
        SS_OMP_ACQUIRE(t, lock, SS_LOCK_OMP_LOCK, real_(lock), 0);                                            \
    }                                                                                                         \
    SS_EXPORT void unset(void *lock) {                                                                        \
        void (*real_)(void *) = SS_OMP_FN(void (*)(void *), unset, SS_CALLER);                                \
        struct ss_thread *t = ss_self_known();                                                                \
        if (t && t->locks.nheld) ss_runtime_releasing(t, lock);                                               \
        real_(lock);                                                                                          \
    }

SS_OMP_LOCK_PAIR(omp_set_lock, omp_test_lock, omp_unset_lock)
SS_OMP_LOCK_PAIR(omp_set_nest_lock, omp_test_nest_lock, omp_unset_nest_lock)

/* LLVM's libomp (clang -fopenmp): its critical sections, by the program's own
 * .gomp_critical_user_<name>.var (kmp_critical_name). Its parallel regions (__kmpc_fork_call,
 * variadic) are not wrapped: their barriers are seen by sampling only. */
static ss_omp_route_ptr ss_route___kmpc_critical, ss_route___kmpc_critical_with_hint, ss_route___kmpc_end_critical;
typedef void (*ss_kmpc_critical_fn)(void *, int32_t, void *);
typedef void (*ss_kmpc_critical_hint_fn)(void *, int32_t, void *, uint32_t);

SS_EXPORT void __kmpc_critical(void *loc, int32_t gtid, void *crit) {
    ss_kmpc_critical_fn real = SS_OMP_FN(ss_kmpc_critical_fn, __kmpc_critical, SS_CALLER);
    struct ss_thread *t = ss_self_known();
    if (!t || !ss_active || t->omp.in_gomp_call) return real(loc, gtid, crit);
    SS_OMP_ACQUIRE(t, crit, SS_LOCK_OMP_CRITICAL, real(loc, gtid, crit), 0);
}

SS_EXPORT void __kmpc_critical_with_hint(void *loc, int32_t gtid, void *crit, uint32_t hint) {
    ss_kmpc_critical_hint_fn real = SS_OMP_FN(ss_kmpc_critical_hint_fn, __kmpc_critical_with_hint, SS_CALLER);
    struct ss_thread *t = ss_self_known();
    if (!t || !ss_active || t->omp.in_gomp_call) return real(loc, gtid, crit, hint);
    SS_OMP_ACQUIRE(t, crit, SS_LOCK_OMP_CRITICAL, real(loc, gtid, crit, hint), 0);
}

SS_EXPORT void __kmpc_end_critical(void *loc, int32_t gtid, void *crit) {
    ss_kmpc_critical_fn real = SS_OMP_FN(ss_kmpc_critical_fn, __kmpc_end_critical, SS_CALLER);
    struct ss_thread *t = ss_self_known();
    if (t && t->locks.nheld && !t->omp.in_gomp_call) ss_runtime_releasing(t, crit);
    real(loc, gtid, crit);
}
