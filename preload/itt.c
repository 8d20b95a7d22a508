/* ITT (docs/STATES.md, "TBB through ITT"): stallscope is the collector library that runtimes
 * built with Intel's ITT notifications load. Their static part (ittnotify_static.c, compiled into
 * oneTBB, libomp, and programs that link ittapi) reads INTEL_LIBITTNOTIFY64 with getenv the first
 * time it is used, dlopens that library, and since it exports __itt_api_init (a "version 2"
 * collector) hands it the table of its entry points to fill.
 *
 * - The variable: `stallscope run` sets nothing. getenv("INTEL_LIBITTNOTIFY64") answers this
 *   library's own path when the environment has no such variable; `environ` is untouched, so the
 *   program's view of its environment, and its children's, stay what they would be, and a
 *   collector the program (or its user) names itself is the one loaded: then this one is not.
 *   dlopen of our own path finds the library already loaded: nothing new is mapped.
 * - The table: the sync calls only. __itt_sync_prepare(obj) .. __itt_sync_acquired(obj) is a
 *   timed acquisition of obj (over a microsecond: a wait, with the waiter's stack) in the thread's
 *   lock table, kind SS_LOCK_ITT_SYNC; __itt_sync_releasing(obj) ends its hold; __itt_sync_cancel
 *   drops a prepare (a try that failed). An acquired with no prepare before it is an uncontended
 *   acquisition of an object known as a lock (created with a named type, or prepared before:
 *   queuing_mutex prepares only when it queues), else no lock (oneTBB's scheduler reports the
 *   task pools it takes from that way, release build or not): ignored. __itt_sync_create of a
 *   named object type takes the creating stack (names a heap object).
 *   Every other entry gets the static part's own null function, as with no collector.
 * - libomp's and Intel's OpenMP runtimes are served nothing: omp.c times their critical sections
 *   and locks already, and two records of one wait would count it twice.
 *
 * The layouts read here are ittnotify_config.h's (__itt_global up to api_list_ptr, and
 * __itt_api_info), packed to 8, checked by the global's magic and version: an unknown static part
 * is left as it was (no collector). Nothing here allocates, locks or calls stdio. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

extern char **environ;

#define SS_ITT_VARIABLE "INTEL_LIBITTNOTIFY64"

struct ss_itt_api_info {
    const char *name;
    void **func_ptr;
    void *init_func;
    void *null_func;
    int group;
};

struct ss_itt_global {
    unsigned char magic[8];
    unsigned long version_major;
    unsigned long version_minor;
    unsigned long version_build;
    volatile long api_initialized;
    volatile long mutex_initialized;
    volatile long atomic_counter;
    pthread_mutex_t mutex;
    void *lib;
    void *error_handler;
    const char **dll_path_ptr;
    struct ss_itt_api_info *api_list_ptr;
};

static const unsigned char ss_itt_magic[8] = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30};

static int ss_itt_serving; /* getenv answers our path (ss_itt_init) */

/* The ITT part of a node, for a new thread (ss_thread_reset, threads.c). */
void ss_itt_thread_reset(struct ss_thread *t) { t->itt = (struct ss_itt_thread){0}; }

/* ---- the objects ---- */

/* The objects known to be locks: created with a named type, or prepared once. oneTBB's
 * queuing_mutex calls prepare only when it has to queue, so an acquired with no prepare before it
 * is an uncontended acquisition of a known object, or else no lock at all (the scheduler's task
 * pools). Open addressing, inserted with a compare-and-swap, never resized: once full, objects
 * met later count only their prepared acquisitions. A destroyed object's slot keeps a tombstone
 * (its address with the low bit set: objects are at least 2-aligned). */
#define SS_ITT_OBJECTS 4096u
#define SS_ITT_PROBES 16u
static uintptr_t ss_itt_objects[SS_ITT_OBJECTS];

static inline uint32_t ss_itt_hash(uintptr_t a) {
    return (uint32_t)(((a >> 3) * 0x9E3779B97F4A7C15ull) >> 52) & (SS_ITT_OBJECTS - 1);
}

static int ss_itt_known(uintptr_t a) {
    for (uint32_t i = 0, h = ss_itt_hash(a); i < SS_ITT_PROBES; i++) {
        uintptr_t v = __atomic_load_n(&ss_itt_objects[(h + i) & (SS_ITT_OBJECTS - 1)], __ATOMIC_RELAXED);
        if (v == a) return 1;
        if (v == 0) return 0;
    }
    return 0;
}

static void ss_itt_remember(uintptr_t a) {
    if (!a || (a & 1)) return;
    for (uint32_t i = 0, h = ss_itt_hash(a); i < SS_ITT_PROBES; i++) {
        uintptr_t *slot = &ss_itt_objects[(h + i) & (SS_ITT_OBJECTS - 1)];
        uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
        if (v == a) return;
        if ((v == 0 || v == (a | 1)) && __atomic_compare_exchange_n(slot, &v, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return;
        if (v == a) return;
    }
}

static void ss_itt_forget(uintptr_t a) {
    for (uint32_t i = 0, h = ss_itt_hash(a); i < SS_ITT_PROBES; i++) {
        uintptr_t *slot = &ss_itt_objects[(h + i) & (SS_ITT_OBJECTS - 1)];
        uintptr_t v = a;
        if (__atomic_compare_exchange_n(slot, &v, a | 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) || v == 0) return;
    }
}

/* ---- the sync calls ---- */

static void ss_itt_sync_create(void *object, const char *type, const char *name, int attributes) {
    (void)name;
    (void)attributes;
    struct ss_thread *t = ss_self_known();
    /* "%Constant" types are the scheduler's own objects (oneTBB's "RML Thr Monitor"). */
    if (!object || !type || type[0] == '%') return;
    ss_itt_remember((uintptr_t)object);
    if (t && ss_active && ss_stacks_on) ss_lock_init_stack(t, object, SS_LOCK_ITT_SYNC);
}

static void ss_itt_sync_prepare(void *object) {
    struct ss_thread *t = ss_self_known();
    if (!t || !ss_active || !object) return;
    if (t->itt.object != (uintptr_t)object && !ss_itt_known((uintptr_t)object)) ss_itt_remember((uintptr_t)object);
    t->itt.object = (uintptr_t)object;
    t->itt.start = ss_ticks();
}

static void ss_itt_sync_cancel(void *object) {
    struct ss_thread *t = ss_self_known();
    if (t && t->itt.object == (uintptr_t)object) t->itt.object = 0;
}

static void ss_itt_sync_acquired(void *object) {
    struct ss_thread *t = ss_self_known();
    if (!t || !object) return;
    uint64_t now = ss_ticks(), wait = 0;
    if (t->itt.object == (uintptr_t)object) {
        t->itt.object = 0;
        wait = now - t->itt.start;
    } else if (!ss_itt_known((uintptr_t)object)) {
        return;
    }
    if (ss_active) ss_runtime_acquired(t, object, SS_LOCK_ITT_SYNC, wait, now, 0);
}

static void ss_itt_sync_releasing(void *object) {
    struct ss_thread *t = ss_self_known();
    if (t && t->locks.nheld) ss_runtime_releasing(t, object);
}

static void ss_itt_sync_destroy(void *object) {
    struct ss_thread *t = ss_self_known();
    if (t && t->itt.object == (uintptr_t)object) t->itt.object = 0;
    if (object) ss_itt_forget((uintptr_t)object);
}

/* ---- TBB's algorithms (the timeline's bands) ----
 * oneTBB marks each thread's part of an algorithm with __itt_task_begin/end. A thread that is not
 * one of TBB's workers (they name themselves through ITT) and begins one is the algorithm's
 * caller: its outermost algorithm joins a run of algorithms (omp.c's runs, lock kind
 * SS_LOCK_ITT_SYNC) named by the caller's stack, taken at the begin: the report reads the
 * algorithm (`tbb::detail::d1::parallel_reduce`, inlined into the user's code) and the user's
 * line from it. The task's name is of no use: oneTBB asks only for ITT's sync, thread and stitch
 * groups, and the static part leaves its string handles NULL. */
struct ss_itt_id {
    unsigned long long d1, d2, d3;
};

static void ss_itt_task_begin(const void *domain, struct ss_itt_id id, struct ss_itt_id parent, const void *name) {
    (void)domain, (void)id, (void)parent, (void)name;
    struct ss_thread *t = ss_self_known();
    if (!t || !ss_active || t->itt.tbb_worker) return;
    if (t->itt.task_depth++ != 0) return;
    t->itt.task_start_ticks = ss_ticks();
    t->itt.task_stack = ss_stack_here();
}

static void ss_itt_task_end(const void *domain) {
    (void)domain;
    struct ss_thread *t = ss_self_known();
    if (!t || t->itt.tbb_worker || t->itt.task_depth == 0 || --t->itt.task_depth != 0 || !ss_active) return;
    ss_run_add(t, &t->itt.tbb_run, SS_LOCK_ITT_SYNC, t->itt.task_stack, t->itt.task_start_ticks, ss_ticks(), 0, 0);
}

static void ss_itt_thread_set_name(const char *name) {
    struct ss_thread *t = ss_self_known();
    if (t && name && strncmp(name, "TBB Worker", 10) == 0) t->itt.tbb_worker = 1;
}

static const struct {
    const char *name;
    void *fn;
} ss_itt_served[] = {
    {"__itt_task_begin", (void *)ss_itt_task_begin},         {"__itt_task_end", (void *)ss_itt_task_end},
    {"__itt_thread_set_name", (void *)ss_itt_thread_set_name},
    {"__itt_sync_create", (void *)ss_itt_sync_create},       {"__itt_sync_prepare", (void *)ss_itt_sync_prepare},
    {"__itt_sync_cancel", (void *)ss_itt_sync_cancel},       {"__itt_sync_acquired", (void *)ss_itt_sync_acquired},
    {"__itt_sync_releasing", (void *)ss_itt_sync_releasing}, {"__itt_sync_destroy", (void *)ss_itt_sync_destroy},
};

/* Whether the static part at `global` is an OpenMP runtime's (omp.c serves those). */
static int ss_itt_of_openmp(const void *global) {
    Dl_info info;
    if (!dladdr(global, &info) || !info.dli_fname) return 0;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libomp", 6) == 0 || strncmp(base, "libiomp", 7) == 0;
}

/* Called by a static part that loaded this library: fills its table. */
SS_EXPORT void __itt_api_init(void *global, int groups) {
    (void)groups;
    struct ss_itt_global *g = global;
    /* Static parts of 2010-10-01 and before had no null_func in their table's rows. */
    if (!g || memcmp(g->magic, ss_itt_magic, sizeof ss_itt_magic) != 0 || g->version_major < 3 ||
        g->version_build <= 20101001ul || !g->api_list_ptr)
        return;
    int serve = !ss_itt_of_openmp(global);
    for (struct ss_itt_api_info *a = g->api_list_ptr; a->name; a++) {
        if (!a->func_ptr) continue;
        void *fn = a->null_func;
        for (size_t i = 0; serve && i < sizeof ss_itt_served / sizeof ss_itt_served[0]; i++)
            if (strcmp(a->name, ss_itt_served[i].name) == 0) fn = ss_itt_served[i].fn;
        __atomic_store_n(a->func_ptr, fn, __ATOMIC_RELEASE);
    }
}

/* ---- the variable ---- */

static char *(*ss_real_getenv)(const char *);

static char *ss_environ_lookup(const char *name) {
    size_t n = strlen(name);
    char **env = environ;
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

SS_EXPORT char *getenv(const char *name) {
    char *(*real)(const char *) = __atomic_load_n(&ss_real_getenv, __ATOMIC_ACQUIRE);
    char *v = real ? real(name) : ss_environ_lookup(name);
    if (v || !name || name[0] != 'I' || !__atomic_load_n(&ss_itt_serving, __ATOMIC_ACQUIRE)) return v;
    if (strcmp(name, SS_ITT_VARIABLE) != 0) return v;
    return (char *)ss_library_path();
}

/* At start-up (lifecycle.c): `serve` when the process records (not one attached to later, whose
 * runtimes have read the variable already). */
void ss_itt_init(int serve) {
    char *(*real)(const char *) = (char *(*)(const char *))dlsym(RTLD_NEXT, "getenv");
    if (real && real != getenv) __atomic_store_n(&ss_real_getenv, real, __ATOMIC_RELEASE);
    const char *path = ss_library_path();
    if (serve && path && path[0] == '/') __atomic_store_n(&ss_itt_serving, 1, __ATOMIC_RELEASE);
}
