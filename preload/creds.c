/* Credential changes. glibc makes setuid and its kin apply to the whole process by having every
 * thread it knows make the same system call (a SIGSETXID broadcast), and aborts the process when
 * the results differ. A program that believes it has one thread changes per-thread state first
 * (setpriv keeps its capabilities with PR_SET_KEEPCAPS, then raises them again with capset, on
 * its only thread), and our flusher, which has not, would fail the next call where the program's
 * thread succeeds: SIGABRT. So around each such call the flusher leaves (glibc then has no thread
 * of ours to reach), and a new one, created by the calling thread after the call and so with its
 * credentials, takes the profile's descriptor over (writer.c, ss_flusher_pause). */
#include "ss_internal.h"

#include <errno.h>
#include <grp.h>
#include <unistd.h>

/* Only one change at a time moves the flusher (glibc serializes the calls themselves). */
static int ss_cred_busy;

static int ss_cred_begin(void) {
    ss_ensure_resolved();
    /* Never in a vfork child (it shares our memory, and the flusher is its parent's). */
    if (ss_busy || !(__atomic_load_n(&ss_active, __ATOMIC_ACQUIRE) || ss_paused) || getpid() != ss_pid) return 0;
    int expected = 0;
    while (!__atomic_compare_exchange_n(&ss_cred_busy, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        expected = 0;
        sched_yield();
    }
    int saved_errno = errno;
    int paused = ss_flusher_pause();
    errno = saved_errno;
    return 1 + paused;
}

static void ss_cred_end(int begun) {
    if (!begun) return;
    int saved_errno = errno;
    if (begun == 2) ss_flusher_resume();
    __atomic_store_n(&ss_cred_busy, 0, __ATOMIC_RELEASE);
    errno = saved_errno;
}

#define SS_CRED_CALL(call)        \
    int begun_ = ss_cred_begin(); \
    int rc_ = ss_real.call;       \
    ss_cred_end(begun_);          \
    return rc_

SS_EXPORT int setuid(uid_t uid) { SS_CRED_CALL(setuid(uid)); }
SS_EXPORT int setgid(gid_t gid) { SS_CRED_CALL(setgid(gid)); }
SS_EXPORT int seteuid(uid_t uid) { SS_CRED_CALL(seteuid(uid)); }
SS_EXPORT int setegid(gid_t gid) { SS_CRED_CALL(setegid(gid)); }
SS_EXPORT int setreuid(uid_t r, uid_t e) { SS_CRED_CALL(setreuid(r, e)); }
SS_EXPORT int setregid(gid_t r, gid_t e) { SS_CRED_CALL(setregid(r, e)); }
SS_EXPORT int setresuid(uid_t r, uid_t e, uid_t s) { SS_CRED_CALL(setresuid(r, e, s)); }
SS_EXPORT int setresgid(gid_t r, gid_t e, gid_t s) { SS_CRED_CALL(setresgid(r, e, s)); }
SS_EXPORT int setgroups(size_t n, const gid_t *groups) { SS_CRED_CALL(setgroups(n, groups)); }
/* glibc's initgroups calls its setgroups internally, past our wrapper. */
SS_EXPORT int initgroups(const char *user, gid_t group) { SS_CRED_CALL(initgroups(user, group)); }
