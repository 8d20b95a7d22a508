/* Futex waits made through the C library's syscall() (docs/STATES.md, "Futex-based locks").
 *
 * Rust's std locks (since 1.62), parking_lot, abseil, folly, oneTBB and libstdc++'s atomic waits,
 * semaphores and latches never call pthread: they spin on a word of their own and, when it stays
 * taken, sleep on it with syscall(SYS_futex, ...). This hook sees those sleeps where the runtime
 * makes them: each FUTEX_WAIT is timed exactly into the thread's lock table under the word's
 * address (kind SS_LOCK_FUTEX), pushed on its wait ring with the thread whose FUTEX_WAKE woke it
 * (a wait-for edge), and its waiter's stack is taken (the first wait of a thread on a word always,
 * later ones at the lock stacks' rate), so that the report can tell from the runtime's own entry
 * points whether the word is a lock, a condition, a parker or an idle worker, and name it at the
 * user's line. Waits made with an inline `syscall` instruction (glibc's internal locks, libgomp on
 * x86-64) never pass here; the sampler sees those from /proc.
 *
 * Any other system call is forwarded at the cost of one compare. Nothing here allocates, locks or
 * calls stdio; errno is the real call's. */
#include "ss_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/syscall.h>

typedef long (*ss_syscall_fn)(long, ...);
static ss_syscall_fn ss_real_syscall;

/* The real syscall(), resolved at start-up (ss_futex_init) or on the first call. */
static ss_syscall_fn ss_syscall_resolve(void) {
    ss_syscall_fn f = __atomic_load_n(&ss_real_syscall, __ATOMIC_ACQUIRE);
    if (SS_LIKELY(f != NULL)) return f;
    f = (ss_syscall_fn)ss_real_sym("syscall", NULL);
    __atomic_store_n(&ss_real_syscall, f, __ATOMIC_RELEASE);
    return f;
}

void ss_futex_init(void) { (void)ss_syscall_resolve(); }


#define SS_FUTEX_CMD(op) ((int)(op) & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME))

/* Operations that put the caller to sleep on the word at the first argument. */
static inline int ss_futex_is_wait(int cmd) {
    return cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET || cmd == FUTEX_LOCK_PI || cmd == FUTEX_WAIT_REQUEUE_PI
#ifdef FUTEX_LOCK_PI2
           || cmd == FUTEX_LOCK_PI2
#endif
        ;
}

/* Operations that wake waiters of the word at the first argument. */
static inline int ss_futex_is_wake(int cmd) {
    return cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET || cmd == FUTEX_WAKE_OP || cmd == FUTEX_UNLOCK_PI ||
           cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE || cmd == FUTEX_CMP_REQUEUE_PI;
}

static SS_NOINLINE long ss_slow_syscall(ss_syscall_fn real, long a1, long a2, long a3, long a4, long a5, long a6) {
    struct ss_thread *t = ss_self_known();
    int cmd = SS_FUTEX_CMD(a2);
    if (!t || !ss_active || a1 == 0) return real(SYS_futex, a1, a2, a3, a4, a5, a6);
    const void *word = (const void *)a1;
    if (ss_futex_is_wake(cmd)) {
        uint64_t at = ss_ticks(); /* the release before it is a store or two earlier */
        long rc = real(SYS_futex, a1, a2, a3, a4, a5, a6);
        int saved = errno;
        if (rc > 0) ss_note_waker(word, t->rec.tid, 0, at);
        errno = saved;
        return rc;
    }
    if (!ss_futex_is_wait(cmd)) return real(SYS_futex, a1, a2, a3, a4, a5, a6);
    uint32_t slot = ss_lock_slot_for(t, word, SS_LOCK_FUTEX);
    int first = SS_LOAD(t->locks.table[slot].contended) == 0;
    uint32_t site = ss_stacks_on ? ss_lock_waiter_stack_of(t, word, SS_LOCK_FUTEX, first) : 0;
    uint64_t stamp = ss_wait_cond_begin(word), start = ss_ticks();
    ss_wait_enter(t, start);
    long rc = real(SYS_futex, a1, a2, a3, a4, a5, a6);
    int saved = errno;
    uint64_t end = ss_ticks(), ticks = end - start;
    ss_wait_leave(t, start, end);
    struct ss_lock_stats *l = &t->locks.table[slot];
    SS_ADD(l->acquisitions, 1);
    SS_ADD(l->contended, 1);
    SS_ADD(l->wait_ticks, ticks);
    if (ticks > l->max_wait_ticks) SS_STORE(l->max_wait_ticks, ticks);
    if (site) ss_lock_waiter_done(site, ticks);
    ss_wait_futex_end(t, word, stamp, start, end, rc == 0);
    errno = saved;
    return rc;
}

/* Only calls that can install something end the recording: programs probe the kernel's support
 * with calls that fail by design (systemd and libseccomp pass a NULL filter for EFAULT, or flags
 * to strict mode for EINVAL), and seccomp(2) also answers queries. */
int ss_seccomp_installs(long op, long flags, const void *args) {
    if (op == SECCOMP_SET_MODE_STRICT) return flags == 0 && args == NULL;
    if (op == SECCOMP_SET_MODE_FILTER) return args != NULL;
    return 0;
}

/* seccomp(2) has no glibc wrapper: programs reach it through syscall() (sandbox.c). */
static SS_NOINLINE long ss_seccomp_call(ss_syscall_fn real, long a1, long a2, long a3) {
    if (ss_seccomp_installs(a1, a2, (const void *)a3)) ss_lifecycle()->before_sandbox();
    return real(SYS_seccomp, a1, a2, a3, 0, 0, 0);
}

#if defined(__x86_64__)
/* The C library's syscall(), taking its six arguments as glibc's own assembly does: in the
 * argument registers and the first stack slot, which a variadic call fills the same way (only
 * %al differs, and nothing here reads it). A variadic definition would spill every register to
 * a save area on each call; this one forwards any other system call with two compares (futex,
 * then seccomp). */
SS_EXPORT long ss_syscall_hook(long nr, long a1, long a2, long a3, long a4, long a5, long a6) __asm__("syscall");
static SS_NOINLINE long ss_syscall_unresolved(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    ss_syscall_fn real = ss_syscall_resolve();
    if (nr == SYS_seccomp) return ss_seccomp_call(real, a1, a2, a3);
    if (nr != SYS_futex) return real(nr, a1, a2, a3, a4, a5, a6);
    return ss_slow_syscall(real, a1, a2, a3, a4, a5, a6);
}

SS_EXPORT long ss_syscall_hook(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    ss_syscall_fn real = __atomic_load_n(&ss_real_syscall, __ATOMIC_ACQUIRE);
    if (SS_UNLIKELY(real == NULL)) return ss_syscall_unresolved(nr, a1, a2, a3, a4, a5, a6);
    if (SS_LIKELY(nr != SYS_futex)) {
        if (SS_UNLIKELY(nr == SYS_seccomp)) return ss_seccomp_call(real, a1, a2, a3);
        return real(nr, a1, a2, a3, a4, a5, a6);
    }
    return ss_slow_syscall(real, a1, a2, a3, a4, a5, a6);
}
#else
/* The C library's syscall(): six argument registers, as glibc's own reads them. */
SS_EXPORT long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    ss_syscall_fn real = ss_syscall_resolve();
    if (SS_LIKELY(nr != SYS_futex)) {
        if (SS_UNLIKELY(nr == SYS_seccomp)) return ss_seccomp_call(real, a1, a2, a3);
        return real(nr, a1, a2, a3, a4, a5, a6);
    }
    return ss_slow_syscall(real, a1, a2, a3, a4, a5, a6);
}
#endif
