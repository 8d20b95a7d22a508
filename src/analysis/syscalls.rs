//! Names the thread states speak of: x86-64 system calls, which of them wait for the world
//! outside the process, signals, and the public names of glibc's internal functions.

/// x86-64 system call names the rules speak of (others are named `syscall_N`).
pub(crate) fn syscall_name(nr: u32, arg: u32) -> String {
    const FUTEX_CMD_MASK: u32 = !(128 | 256); // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
    let name = match nr {
        0 => "read",
        1 => "write",
        2 => "open",
        3 => "close",
        7 => "poll",
        9 => "mmap",
        10 => "mprotect",
        11 => "munmap",
        12 => "brk",
        17 => "pread64",
        18 => "pwrite64",
        19 => "readv",
        20 => "writev",
        23 => "select",
        25 => "mremap",
        28 => "madvise",
        34 => "pause",
        35 => "nanosleep",
        43 => "accept",
        45 => "recvfrom",
        47 => "recvmsg",
        61 => "wait4",
        74 => "fsync",
        75 => "fdatasync",
        128 => "rt_sigtimedwait",
        130 => "rt_sigsuspend",
        202 if arg & FUTEX_CMD_MASK == 0 => "futex-wait", // FUTEX_WAIT: glibc's lock waits
        202 => "futex",
        230 => "clock_nanosleep",
        232 => "epoll_wait",
        247 => "waitid",
        257 => "openat",
        270 => "pselect6",
        271 => "ppoll",
        281 => "epoll_pwait",
        288 => "accept4",
        299 => "recvmmsg",
        441 => "epoll_pwait2",
        // The sampler could not read the system call (a process made non-dumpable by setuid).
        n if n == u32::from(crate::profile::format::SYSCALL_UNKNOWN) - 1 => "unknown",
        other => return format!("syscall_{other}"),
    };
    name.to_string()
}

/// System calls in which a thread waits for the world outside the process (a client, a timer),
/// not for another of its threads.
pub(crate) fn waits_for_input(syscall: &str) -> bool {
    matches!(
        syscall,
        "poll"
            | "select"
            | "pselect6"
            | "ppoll"
            | "epoll_wait"
            | "epoll_pwait"
            | "epoll_pwait2"
            | "accept"
            | "accept4"
            | "recvfrom"
            | "recvmsg"
            | "recvmmsg"
            | "read"
            | "nanosleep"
            | "clock_nanosleep"
            | "pause"
            | "rt_sigtimedwait"
            | "rt_sigsuspend"
    )
}

/// glibc's debug names of public functions carry internal prefixes: `__random` is random(),
/// `__GI___libc_write` is write's implementation.
pub(crate) fn public_libc_name(name: &str) -> &str {
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    let name = name.strip_prefix("__libc_").unwrap_or(name);
    let bare = name.trim_start_matches('_');
    // glibc 2.42 splits malloc's slow path into `__libc_malloc2` (and kin): still malloc.
    let undigited = bare.trim_end_matches(|c: char| c.is_ascii_digit());
    if undigited.len() < bare.len() && ["malloc", "calloc", "realloc", "free"].contains(&undigited)
    {
        return undigited;
    }
    // `_IO_fwrite` keeps its name: only lower-case names are public functions in disguise.
    if bare.starts_with(|c: char| c.is_ascii_lowercase()) {
        bare
    } else {
        name
    }
}

/// The name of a signal number, as `kill -l` would put it.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    let rtmin = 34; // glibc's SIGRTMIN (the kernel's 32 and 33 are glibc's own)
    match sig {
        1..=31 => NAMES[sig as usize].to_string(),
        s if s >= rtmin => format!("SIGRTMIN+{}", s - rtmin),
        s => format!("signal {s}"),
    }
}
