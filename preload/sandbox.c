/* Seccomp sandboxes: where a program installs a filter, through prctl(PR_SET_SECCOMP) or
 * seccomp(2) by syscall() (libseccomp, systemd, OpenSSH and Chromium take one of the two), the
 * interposer ends its recording first (ss_before_sandbox, lifecycle.c). A raw `syscall`
 * instruction (Go, hand-written assembly) goes unseen. */
#include "ss_internal.h"

#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#ifndef PR_SET_SECCOMP
#define PR_SET_SECCOMP 22
#endif

/* Only calls that can install something end the recording: programs probe the kernel's support
 * with calls that fail by design (systemd and libseccomp pass a NULL filter for EFAULT, or flags
 * to strict mode for EINVAL), and seccomp(2) also answers queries. */
int ss_seccomp_installs(long op, long flags, const void *args) {
    if (op == SECCOMP_SET_MODE_STRICT) return flags == 0 && args == NULL;
    if (op == SECCOMP_SET_MODE_FILTER) return args != NULL;
    return 0;
}

static int ss_prctl_installs(int option, unsigned long mode, unsigned long filter) {
    if (option != PR_SET_SECCOMP) return 0;
    if (mode == SECCOMP_MODE_STRICT) return 1; /* the kernel ignores the third argument */
    return mode == SECCOMP_MODE_FILTER && filter != 0;
}

/* glibc's prctl is variadic and reads four more arguments, whatever the option: as syscall()'s hook
 * (futex.c), this takes them from the registers a variadic call fills the same way. */
SS_EXPORT int ss_prctl_hook(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
    __asm__("prctl");
SS_EXPORT int ss_prctl_hook(int option, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
    ss_ensure_resolved();
    if (SS_UNLIKELY(ss_prctl_installs(option, a2, a3))) ss_before_sandbox();
    if (ss_real.prctl) return ss_real.prctl(option, a2, a3, a4, a5);
    return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
}
