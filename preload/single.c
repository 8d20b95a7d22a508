/* A single-threaded program stays single-threaded in glibc's eyes, although the flusher runs.
 *
 * glibc (2.32 and later) keeps `__libc_single_threaded` true until the first pthread_create, and
 * takes faster paths while it is: malloc skips its arena locks, pthread_mutex_lock and unlock use
 * plain stores for private mutexes (2.35+), fork skips locking every arena and stdio's list (and
 * the child re-initialising them), and libstdc++ counts shared_ptr references without atomic
 * instructions. Creating the flusher with pthread_create turns all of that off: a profiled
 * single-threaded program would run other code than unprofiled, and each fork would cost it
 * 20-40 us more (docs/PERFORMANCE.md, "Fork children").
 *
 * So after creating the flusher in a process glibc believed single-threaded, the flag is set back
 * (glibc's own copy, found past this library, and the one the program sees, which may be a copy
 * relocated into the executable). That is sound only while the flusher shares nothing with the
 * program that those fast paths protect. It allocates nothing and uses no stdio anyway; the one
 * glibc lock it takes is the loader's, in dl_iterate_phdr (the list of loaded objects), and while
 * the flag is kept it takes it only when every program thread waits for it (the final flush):
 * periodic flushes leave the list as the program's own threads last read it (at start, at
 * dlclose). The flusher's other work that would take such locks keeps the flag as glibc left it:
 * heap snapshots from the flusher (malloc_info), and a process that `stallscope attach` serves
 * (the flusher looks symbols up and binds slots there).
 *
 * The first thread the program creates makes glibc clear the flag for good: from then on the
 * process is multi-threaded for everyone and nothing here applies. Other C libraries, and glibc
 * before 2.32, have no such flag: nothing changes there. STALLSCOPE_KEEP_SINGLE=0 turns this
 * off for comparisons. */
#include "ss_internal.h"

#include <dlfcn.h>

static char *ss_single_libc; /* glibc's own flag (what malloc, fork and the mutexes read) */
static char *ss_single_seen; /* the flag as the program and its libraries see it */

void ss_single_init(void) {
    if (!ss_option_num(SS_OPT_KEEP_SINGLE)) return;
    char *libc_flag = dlvsym(RTLD_NEXT, "__libc_single_threaded", "GLIBC_2.32");
    if (!libc_flag || !ss_in_libc(libc_flag)) return;
    ss_single_libc = libc_flag;
    ss_single_seen = dlsym(RTLD_DEFAULT, "__libc_single_threaded");
}

/* Before creating a thread of ours: whether to set the flag back once it exists. */
int ss_single_before_create(void) {
    if (!ss_single_libc || ss_config.paused || ss_injected) return 0;
    if (ss_config.snapshot_ms || ss_config.snapshot_signal) return 0; /* the flusher calls malloc_info */
    return __atomic_load_n(ss_single_libc, __ATOMIC_RELAXED) != 0;
}

void ss_single_after_create(int keep) {
    if (!keep) return;
    __atomic_store_n(ss_single_libc, 1, __ATOMIC_RELAXED);
    if (ss_single_seen && ss_single_seen != ss_single_libc) __atomic_store_n(ss_single_seen, 1, __ATOMIC_RELAXED);
}

/* Whether glibc believes the process single-threaded: asked by the flusher, which then must take
 * no glibc lock a program thread may hold (whoever set the flag: glibc clears it when it makes a
 * thread, so the flusher finds it set only where it was set back). */
int ss_single_kept(void) { return ss_single_libc && __atomic_load_n(ss_single_libc, __ATOMIC_RELAXED) != 0; }
