/* OpenMP with LLVM's libomp (clang -fopenmp; Intel's libiomp5 is the same runtime) through OMPT,
 * the OpenMP tools interface (docs/STATES.md, "OpenMP"). libomp calls `ompt_start_tool` if the
 * process has one, and the preloaded library's comes first: stallscope is then the OMPT tool and
 * sees each parallel region as omp.c's trampolines see libgomp's, recorded the same way in the
 * master's lock table (kind SS_LOCK_OMP_REGION_SITE: the same fields as SS_LOCK_OMP_REGION, by
 * the call site instead of the body), so clang's programs get the same findings.
 *
 * - A region is named by its call site in the user's code: `codeptr_ra` is the return address of
 *   the program's call into the runtime (__kmpc_fork_call), so codeptr_ra - 1 is the call, whose
 *   line is the pragma's, in the function that holds it (`main at x.c:20`). The outlined body
 *   (`.omp_outlined.`) is not given to a tool, and clang names it with no trace of its function.
 * - Each member's body runs from its implicit task's begin to its arrival at the region's closing
 *   barrier (sync_region_wait begin, barrier_implicit_parallel, `barrier_implicit` in libomp 14
 *   and earlier, which also reports an `omp for`'s own barrier with that kind: the last arrival
 *   in the region is the closing one). The team's time at the closing barrier is measured: each
 *   member waits from its arrival until the last member arrives. (A worker's wait end is useless:
 *   libomp reports it only when the worker is woken for the next region.) The fork-join cost is
 *   the region's wall time less the longest body, as omp.c's.
 * - Critical sections and omp locks: omp.c's hooks on __kmpc_critical*, omp_set_lock and
 *   omp_set_nest_lock win, and the OMPT mutex callbacks are not registered, so nothing is counted
 *   twice. The hooks name a critical section by the program's own .gomp_critical_user_<name>.var,
 *   while OMPT's wait_id is libomp's lock object on its heap (libomp 14 allocates the queuing lock
 *   of a critical section: nameless); and the hooks count the same with or without OMPT (another
 *   tool, OMP_TOOL=disabled).
 *
 * Another tool is never displaced: with OMP_TOOL_LIBRARIES set, this returns NULL and libomp
 * loads that tool; an `ompt_start_tool` later in the search order (a tool linked into the
 * program) is asked first, and if it takes the job, its answer is returned. Only one tool can be
 * active: then the regions are not seen, the locks still are (omp.c). OMP_TOOL=disabled (libomp
 * never asks for a tool) gives the same, for comparisons.
 *
 * GCC-built code on libomp calls the GOMP_ entry points, which omp.c's trampolines wrap: libomp
 * reports those regions with the hook's own return address as the call site, and they are left
 * to the trampolines (a region counted once, named by its outlined body).
 *
 * The types are the few of omp-tools.h (OpenMP 5.0) that this needs, defined here: the header
 * ships with the compiler's runtime, not always present. Nothing here allocates, locks or calls
 * stdio: the regions in flight live in a static table. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <stdlib.h>

typedef union {
    uint64_t value;
    void *ptr;
} ss_ompt_data;

typedef void (*ss_ompt_interface_fn)(void);
typedef ss_ompt_interface_fn (*ss_ompt_lookup)(const char *name);
typedef int (*ss_ompt_set_callback)(int event, ss_ompt_interface_fn callback);

typedef struct {
    int (*initialize)(ss_ompt_lookup lookup, int initial_device_num, ss_ompt_data *tool_data);
    void (*finalize)(ss_ompt_data *tool_data);
    ss_ompt_data tool_data;
} ss_ompt_start_tool_result;

enum {
    SS_OMPT_CB_PARALLEL_BEGIN = 3,     /* ompt_callback_parallel_begin */
    SS_OMPT_CB_PARALLEL_END = 4,       /* ompt_callback_parallel_end */
    SS_OMPT_CB_IMPLICIT_TASK = 7,      /* ompt_callback_implicit_task */
    SS_OMPT_CB_SYNC_REGION_WAIT = 16,  /* ompt_callback_sync_region_wait */
    SS_OMPT_SET_SOMETIMES_PAIRED = 4,  /* ompt_set_sometimes_paired: the least we take */
    SS_OMPT_SCOPE_BEGIN = 1,           /* ompt_scope_begin */
    SS_OMPT_TASK_INITIAL = 1,          /* ompt_task_initial */
    SS_OMPT_PARALLEL_LEAGUE = 0x40000000, /* ompt_parallel_league: a teams construct */
    SS_OMPT_BARRIER_IMPLICIT = 2,      /* ompt_sync_region_barrier_implicit (before OpenMP 5.1) */
    SS_OMPT_BARRIER_IMPLICIT_PARALLEL = 9, /* ompt_sync_region_barrier_implicit_parallel */
};

/* This library's code: a region whose call site is in it came through omp.c's GOMP_ hooks (GCC-built
 * code on libomp), whose trampolines record it. */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _etext[] __attribute__((visibility("hidden")));

/* The regions in flight (nested ones, concurrent teams), each claimed by its master at the
 * region's begin and released at its end; a member's times by its index in the team. A region
 * whose team does not fit, or that finds the table full, is not recorded. */
#define SS_OMPT_REGIONS 64u
#define SS_OMPT_MEMBERS 256u

struct ss_ompt_member {
    uint64_t start;   /* ticks: its implicit task began */
    uint64_t arrival; /* ticks: it last arrived at a barrier of the region (0: none) */
};

struct ss_ompt_region {
    uint32_t busy;
    uint32_t members; /* implicit tasks begun */
    uint32_t overflow; /* a member's index did not fit */
    const void *where; /* codeptr_ra - 1 */
    uint64_t start;
    struct ss_ompt_member m[SS_OMPT_MEMBERS];
};

static struct ss_ompt_region ss_ompt_regions[SS_OMPT_REGIONS];

/* A member's implicit task data: its region's slot + 1 (low 32 bits) and its index. */
static inline uint64_t ss_ompt_member_key(uint32_t slot, uint32_t index) {
    return (uint64_t)(slot + 1) | ((uint64_t)index << 32);
}

static void ss_ompt_parallel_begin(ss_ompt_data *task, const void *frame, ss_ompt_data *parallel,
                                   unsigned requested, int flags, const void *codeptr_ra) {
    if (!parallel) return;
    parallel->value = 0;
    if (!__atomic_load_n(&ss_active, __ATOMIC_RELAXED) || !codeptr_ra || (flags & SS_OMPT_PARALLEL_LEAGUE))
        return;
    if ((const char *)codeptr_ra >= __ehdr_start && (const char *)codeptr_ra < _etext) return;
    for (uint32_t i = 0; i < SS_OMPT_REGIONS; i++) {
        struct ss_ompt_region *r = &ss_ompt_regions[i];
        uint32_t free_ = 0;
        if (__atomic_load_n(&r->busy, __ATOMIC_RELAXED) ||
            !__atomic_compare_exchange_n(&r->busy, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        r->where = (const char *)codeptr_ra - 1;
        __atomic_store_n(&r->members, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&r->overflow, 0, __ATOMIC_RELAXED);
        r->start = ss_ticks();
        parallel->value = i + 1;
        return;
    }
}

static void ss_ompt_implicit_task(int endpoint, ss_ompt_data *parallel, ss_ompt_data *task, unsigned actual,
                                  unsigned index, int flags) {
    if (endpoint != SS_OMPT_SCOPE_BEGIN || !task) return;
    task->value = 0;
    if (!parallel || (flags & SS_OMPT_TASK_INITIAL)) return;
    uint64_t slot = parallel->value;
    if (slot == 0 || slot > SS_OMPT_REGIONS) return;
    struct ss_ompt_region *r = &ss_ompt_regions[slot - 1];
    if (index >= SS_OMPT_MEMBERS) {
        __atomic_store_n(&r->overflow, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&r->m[index].arrival, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&r->m[index].start, ss_ticks(), __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->members, 1, __ATOMIC_RELAXED);
    task->value = ss_ompt_member_key((uint32_t)(slot - 1), index);
}

/* A member arrives at a barrier: the last arrival before the region ends is at its closing one
 * (the callback comes before the member signals its arrival, so the master reads it after). */
static void ss_ompt_sync_region_wait(int kind, int endpoint, ss_ompt_data *parallel, ss_ompt_data *task,
                                     const void *codeptr_ra) {
    if (endpoint != SS_OMPT_SCOPE_BEGIN || !task || task->value == 0) return;
    if (kind != SS_OMPT_BARRIER_IMPLICIT && kind != SS_OMPT_BARRIER_IMPLICIT_PARALLEL) return;
    uint32_t slot = (uint32_t)task->value - 1;
    uint32_t index = (uint32_t)(task->value >> 32);
    if (slot >= SS_OMPT_REGIONS || index >= SS_OMPT_MEMBERS) return;
    __atomic_store_n(&ss_ompt_regions[slot].m[index].arrival, ss_ticks(), __ATOMIC_RELAXED);
}

/* The master, after the closing barrier: the run recorded, the slot released. */
static void ss_ompt_parallel_end(ss_ompt_data *parallel, ss_ompt_data *task, int flags, const void *codeptr_ra) {
    if (!parallel) return;
    uint64_t slot = parallel->value;
    if (slot == 0 || slot > SS_OMPT_REGIONS) return;
    parallel->value = 0;
    struct ss_ompt_region *r = &ss_ompt_regions[slot - 1];
    uint64_t end = ss_ticks();
    uint32_t members = __atomic_load_n(&r->members, __ATOMIC_RELAXED);
    if (members > SS_OMPT_MEMBERS) members = SS_OMPT_MEMBERS;
    /* The closing barrier ends when the last member arrives. */
    uint64_t last = 0;
    for (uint32_t i = 0; i < members; i++) {
        uint64_t a = __atomic_load_n(&r->m[i].arrival, __ATOMIC_RELAXED);
        if (a > last) last = a;
    }
    uint64_t barrier = 0, longest = 0;
    uint32_t seen = 0;
    for (uint32_t i = 0; i < members; i++) {
        uint64_t s = __atomic_load_n(&r->m[i].start, __ATOMIC_RELAXED);
        uint64_t a = __atomic_load_n(&r->m[i].arrival, __ATOMIC_RELAXED);
        if (s == 0) continue; /* an index never begun (not dense): not counted */
        seen++;
        if (a == 0) a = end; /* no barrier (a team of one): its body ran to the end */
        if (a > s && a - s > longest) longest = a - s;
        if (last > a) barrier += last - a;
        r->m[i].start = r->m[i].arrival = 0;
    }
    uint64_t wall = end > r->start ? end - r->start : 0;
    const void *where = r->where;
    int overflow = __atomic_load_n(&r->overflow, __ATOMIC_RELAXED);
    __atomic_store_n(&r->busy, 0, __ATOMIC_RELEASE);
    struct ss_thread *t = ss_self_known();
    if (!t || !ss_active || overflow || seen == 0) return;
    ss_omp_region_record(t, where, SS_LOCK_OMP_REGION_SITE, seen, wall, barrier, wall > longest ? wall - longest : 0,
                         end, 1);
}

static int ss_ompt_initialize(ss_ompt_lookup lookup, int initial_device_num, ss_ompt_data *tool_data) {
    ss_ompt_set_callback set = lookup ? (ss_ompt_set_callback)lookup("ompt_set_callback") : NULL;
    if (!set) return 0;
    /* The regions need all four; without one (a runtime that cannot), none is kept. */
    static const struct {
        int event;
        ss_ompt_interface_fn fn;
    } callbacks[] = {
        {SS_OMPT_CB_PARALLEL_BEGIN, (ss_ompt_interface_fn)ss_ompt_parallel_begin},
        {SS_OMPT_CB_PARALLEL_END, (ss_ompt_interface_fn)ss_ompt_parallel_end},
        {SS_OMPT_CB_IMPLICIT_TASK, (ss_ompt_interface_fn)ss_ompt_implicit_task},
        {SS_OMPT_CB_SYNC_REGION_WAIT, (ss_ompt_interface_fn)ss_ompt_sync_region_wait},
    };
    for (size_t i = 0; i < sizeof callbacks / sizeof callbacks[0]; i++) {
        if (set(callbacks[i].event, callbacks[i].fn) < SS_OMPT_SET_SOMETIMES_PAIRED) {
            for (size_t j = 0; j <= i; j++) set(callbacks[j].event, NULL);
            return 0;
        }
    }
    return 1; /* nonzero: the tool stays active */
}

static void ss_ompt_finalize(ss_ompt_data *tool_data) {}

static ss_ompt_start_tool_result ss_ompt_result = {ss_ompt_initialize, ss_ompt_finalize, {0}};

typedef ss_ompt_start_tool_result *(*ss_ompt_start_tool_fn)(unsigned int, const char *);

SS_EXPORT ss_ompt_start_tool_result *ompt_start_tool(unsigned int omp_version, const char *runtime_version) {
    /* A tool the user named: libomp loads it when this returns NULL. */
    const char *named = getenv("OMP_TOOL_LIBRARIES");
    if (named && *named) return NULL;
    /* A tool later in the search order (the runtime's own weak default, which looks further
     * still, answers NULL): its answer wins. */
    ss_ompt_start_tool_fn next = (ss_ompt_start_tool_fn)ss_next_symbol("ompt_start_tool", NULL);
    if (next && next != ompt_start_tool) {
        ss_ompt_start_tool_result *theirs = next(omp_version, runtime_version);
        if (theirs) return theirs;
    }
    return &ss_ompt_result;
}
