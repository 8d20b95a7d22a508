//! The program inherits the signal state stallscope itself was started with, and the supervisor
//! passes signals on without keeping any of its own handling in the program.
//!
//! Rust's runtime changes that state before `main` (SIGPIPE ignored; a closed 0, 1 or 2 reopened
//! on /dev/null), and `Command` resets SIGPIPE and the mask in its children; an ignored signal
//! survives exec. So the state is captured from `.init_array`, before the runtime starts, and put
//! back exactly in the child between its start and exec (`restore_in_child`; spawn.rs).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Bit `n - 1` for signal `n` (1..=64): ignored when stallscope started.
static IGNORED: AtomicU64 = AtomicU64::new(0);
/// Bit `n - 1` for signal `n`: blocked when stallscope started.
static BLOCKED: AtomicU64 = AtomicU64::new(0);
/// Bit `fd` for the standard descriptors (0, 1, 2) that were closed when stallscope started.
static CLOSED_STDIO: AtomicU64 = AtomicU64::new(0);
static CAPTURED: AtomicBool = AtomicBool::new(false);

/// The highest signal number on Linux (real-time signals included).
const MAX_SIGNAL: i32 = 64;

fn bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// Run by the C runtime before Rust's (`.init_array`), with only async-signal-safe calls.
extern "C" fn capture_at_start(_argc: i32, _argv: *const *const u8, _envp: *const *const u8) {
    let (mut ignored, mut blocked, mut closed) = (0u64, 0u64, 0u64);
    // SAFETY: queries only; sigaction and sigprocmask write into the zeroed structures given.
    unsafe {
        for sig in 1..=MAX_SIGNAL {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_flags & libc::SA_SIGINFO == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                ignored |= bit(sig);
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        if libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut set) == 0 {
            blocked = mask_bits(&set);
        }
        for fd in 0..3 {
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                closed |= 1 << fd;
            }
        }
    }
    IGNORED.store(ignored, Ordering::Relaxed);
    BLOCKED.store(blocked, Ordering::Relaxed);
    CLOSED_STDIO.store(closed, Ordering::Relaxed);
    CAPTURED.store(true, Ordering::Release);
}

#[used]
#[unsafe(link_section = ".init_array")]
static CAPTURE_AT_START: extern "C" fn(i32, *const *const u8, *const *const u8) = capture_at_start;

#[cfg(test)]
/// Whether `sig` was ignored when stallscope started.
pub fn was_ignored(sig: i32) -> bool {
    (1..=MAX_SIGNAL).contains(&sig) && IGNORED.load(Ordering::Relaxed) & bit(sig) != 0
}

/// In the child, between its start and exec: every signal's disposition (ignored or default),
/// the mask and the closed standard descriptors as stallscope found them. Async-signal-safe.
/// Returns false, changing nothing, where the state was not captured (which cannot happen in the
/// stallscope executable).
///
/// The dispositions and the mask are set by the system calls themselves, not through the C
/// library's functions: a `stallscope run` that is itself profiled has the outer interposer's
/// `sigaction` hook in front of those, and the child of spawn.rs runs in its parent's memory,
/// where that hook would act on the parent's sampling state (its timer signal moved aside).
pub fn restore_in_child() -> bool {
    if !CAPTURED.load(Ordering::Acquire) {
        return false;
    }
    let (ignored, blocked) = (
        IGNORED.load(Ordering::Relaxed),
        BLOCKED.load(Ordering::Relaxed),
    );
    for sig in 1..=MAX_SIGNAL {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP && !glibc_reserved(sig) {
            raw_set_disposition(sig, ignored & bit(sig) != 0);
        }
    }
    raw_set_mask(blocked);
    let closed = CLOSED_STDIO.load(Ordering::Relaxed);
    for fd in 0..3 {
        if closed & (1 << fd) != 0 {
            // SAFETY: closing a descriptor number; nothing of ours uses it in the child.
            unsafe { libc::close(fd) };
        }
    }
    true
}

/// In a child whose start state was not captured: the handlers this process installed back to
/// the default (as exec would), then `mask`, the parent's (bit `n - 1` for signal `n`).
pub fn reset_handlers_in_child(mask: u64) {
    for sig in 1..=MAX_SIGNAL {
        if sig != libc::SIGKILL
            && sig != libc::SIGSTOP
            && !glibc_reserved(sig)
            && raw_has_handler(sig)
        {
            raw_set_disposition(sig, false);
        }
    }
    raw_set_mask(mask);
}

/// A signal set as bit `n - 1` for signal `n`.
pub fn mask_bits(set: &libc::sigset_t) -> u64 {
    (1..=MAX_SIGNAL)
        // SAFETY: sigismember reads the set given.
        .filter(|&sig| unsafe { libc::sigismember(set, sig) } == 1)
        .fold(0, |bits, sig| bits | bit(sig))
}

/// The signals glibc keeps for its threads (SIGCANCEL, SIGSETXID): their handlers are its own,
/// and `sigaction` refuses them; exec resets them.
fn glibc_reserved(sig: i32) -> bool {
    sig == 32 || sig == 33
}

/// The kernel's `struct sigaction` on x86-64 (rt_sigaction's, not the C library's).
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

fn raw_set_disposition(sig: i32, ignore: bool) {
    let action = KernelSigaction {
        handler: if ignore { libc::SIG_IGN } else { libc::SIG_DFL },
        ..KernelSigaction::default()
    };
    // SAFETY: rt_sigaction reads the structure given (the kernel's layout, an 8-byte mask).
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            &action as *const KernelSigaction,
            std::ptr::null_mut::<KernelSigaction>(),
            8usize,
        )
    };
}

fn raw_has_handler(sig: i32) -> bool {
    let mut old = KernelSigaction::default();
    // SAFETY: rt_sigaction writes into the structure given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            std::ptr::null::<KernelSigaction>(),
            &mut old as *mut KernelSigaction,
            8usize,
        )
    };
    r == 0 && old.handler != libc::SIG_DFL && old.handler != libc::SIG_IGN
}

fn raw_set_mask(mask: u64) {
    // SAFETY: rt_sigprocmask reads the 8-byte set given.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
}

/// Signals a process may send to stallscope that are meant for the program: passed on to it.
const FORWARDED: [i32; 6] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The launched process while it runs (0 before it starts and once it has ended).
static CHILD_PID: AtomicI32 = AtomicI32::new(0);
/// Forwarded signals that arrived before the child's pid was known (bit `n - 1`).
static PENDING: AtomicU64 = AtomicU64::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // The terminal sends keyboard signals (Ctrl-C, Ctrl-\) and hangups to the whole foreground
    // process group, the program included: it has its own copy already.
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    if info.is_null() || unsafe { (*info).si_code } == libc::SI_KERNEL {
        return;
    }
    let mut pid = CHILD_PID.load(Ordering::Acquire);
    if pid == 0 {
        PENDING.fetch_or(bit(sig), Ordering::AcqRel);
        // The child may have been published meanwhile; whoever clears the bit sends it.
        pid = CHILD_PID.load(Ordering::Acquire);
        if pid == 0 || PENDING.fetch_and(!bit(sig), Ordering::AcqRel) & bit(sig) == 0 {
            return;
        }
    }
    // SAFETY: kill is async-signal-safe. The pid cannot have been reused: it is cleared before
    // the child is reaped (see `child_ended`).
    unsafe { libc::kill(pid, sig) };
}

/// The supervisor's own handling, set up before the child starts: the forwarded signals go to
/// `forward` (so stallscope never dies of Ctrl-C while its program may go on), and SIGCHLD is
/// at its default so that waiting for the child works even if it was ignored at start. None of it
/// reaches the program: `restore_in_child` undoes it between the child's start and its exec.
pub fn supervise() {
    // SAFETY: installing handlers; `forward` only uses atomics and kill.
    unsafe {
        for sig in FORWARDED {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    }
}

/// The child is running: signals that arrived while it started are passed on now.
pub fn child_started(pid: i32) {
    CHILD_PID.store(pid, Ordering::Release);
    let pending = PENDING.swap(0, Ordering::AcqRel);
    for sig in FORWARDED {
        if pending & bit(sig) != 0 {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, sig) };
        }
    }
}

/// Waits until the child has ended without reaping it (its pid stays reserved), then stops
/// forwarding. The caller reaps it afterwards.
pub fn wait_for_end(pid: i32) {
    loop {
        // SAFETY: waitid writes into the zeroed siginfo.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    CHILD_PID.store(0, Ordering::Release);
}

/// Ends stallscope the way its program ended, killed by `sig`, so that its parent sees the same
/// wait status (a shell stops a loop on a child killed by SIGINT, not on one that exits 130).
/// No core file: the program's own was written already. Returns only if `sig` does not kill.
pub fn die_like(sig: i32) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: plain system calls on our own process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        let mut core: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_CORE, &mut core) == 0 {
            core.rlim_cur = 0;
            libc::setrlimit(libc::RLIMIT_CORE, &core);
        }
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_at_start_was_captured_before_rusts_runtime() {
        assert!(CAPTURED.load(Ordering::Acquire), ".init_array ran");
        // Rust's runtime ignores SIGPIPE before main: the captured state must not say so unless
        // the test itself was started that way (cargo does not do that).
        let now_ignored = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGPIPE, std::ptr::null(), &mut old);
            old.sa_sigaction == libc::SIG_IGN
        };
        assert!(now_ignored, "the runtime ignores SIGPIPE in this process");
        assert!(
            !was_ignored(libc::SIGPIPE),
            "but it was not ignored at start"
        );
    }
}
