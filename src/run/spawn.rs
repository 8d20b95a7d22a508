//! Starting the launched process the way `posix_spawn` does: a child that shares the supervisor's
//! memory (`CLONE_VM | CLONE_VFORK`) and runs only until its exec, so that no page table is copied
//! and nothing is faulted in twice. `Command::spawn` forks as soon as it has a `pre_exec`, and a
//! fork of the supervisor costs a start about a quarter of a millisecond more (docs/PERFORMANCE.md,
//! "A start's fixed cost").
//!
//! The child runs on a stack of its own and may only make system calls and write into memory
//! prepared before it: it shares the parent's heap, globals and even its thread's TLS (errno). The
//! parent is suspended from the clone until the child's exec or exit. Every signal is blocked
//! across the clone, so that none of the supervisor's handlers ever runs in the child: the child
//! sets each disposition back (to what stallscope started with) before it unblocks any.

use std::ffi::CString;
use std::io;

/// What the child needs, prepared by the parent; read and written by the child in place.
struct ChildJob<'a> {
    file: &'a CString,
    argv: Vec<*const libc::c_char>,
    /// Makes the child's environment and returns it (the caller's work between the child's start
    /// and its exec).
    prepare: &'a mut dyn FnMut() -> *const *const libc::c_char,
    /// The mask the parent had before blocking everything, bit `n - 1` for signal `n` (for a
    /// child whose start state was not captured: see `signals::restore_in_child`).
    parent_mask: u64,
    /// The errno of a failed exec, written by the child before it exits; 0 if exec happened.
    exec_errno: i32,
}

extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's ChildJob, alive and untouched while the parent is suspended.
    let job = unsafe { &mut *(arg as *mut ChildJob<'_>) };
    if !super::signals::restore_in_child() {
        super::signals::reset_handlers_in_child(job.parent_mask);
    }
    let envp = (job.prepare)();
    // SAFETY: file, argv and envp are NUL-terminated and outlive the call; execvpe searches PATH as
    // execvp does (and runs a script without `#!` through /bin/sh as execvp does).
    unsafe {
        libc::execvpe(job.file.as_ptr(), job.argv.as_ptr(), envp);
        job.exec_errno = *libc::__errno_location();
        libc::_exit(127)
    }
}

/// Starts `args[0]` (searched in PATH as execvp does) with `args`, the environment `prepare`
/// returns (called in the child, between the clone and exec: async-signal-safe work only, no
/// allocation, no locks), and the signal state stallscope started with. Returns the child's pid
/// once it has exec'd; a failed exec is an error (the child reaped).
pub fn spawn(
    args: &[CString],
    prepare: &mut dyn FnMut() -> *const *const libc::c_char,
) -> io::Result<i32> {
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    // The child's stack: its frames, and execvpe's copy of argv for /bin/sh. Its lowest page is a
    // guard: an overflow faults instead of writing into the parent's memory, which it shares.
    let page = 4096;
    let stack_size = (256 << 10) + args.len() * 16 + page;
    // SAFETY: an anonymous private mapping; failure is checked.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            stack_size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the first page of the mapping just made.
    unsafe { libc::mprotect(stack, page, libc::PROT_NONE) };
    let mut job = ChildJob {
        file: &args[0],
        argv,
        prepare,
        parent_mask: 0,
        exec_errno: 0,
    };
    // SAFETY: the mask calls write into our own sigset_t values; clone runs child_main on the new
    // stack (its top, 16-byte aligned) with `job`, which stays alive and unmoved until clone
    // returns, after the child's exec or exit (CLONE_VFORK).
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut before);
        job.parent_mask = super::signals::mask_bits(&before);
        let top = (stack as usize + stack_size) & !15;
        let pid = libc::clone(
            child_main,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut job as *mut ChildJob<'_> as *mut libc::c_void,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        libc::munmap(stack, stack_size);
        if pid < 0 {
            return Err(clone_error);
        }
        pid
    };
    // SAFETY: read after the child is gone from this memory (it exec'd or exited).
    let errno = unsafe { std::ptr::read_volatile(&job.exec_errno) };
    if errno != 0 {
        let _ = wait_for_exit(pid); // its status is the 127 it exited with
        return Err(io::Error::from_raw_os_error(errno));
    }
    Ok(pid)
}

/// Reaps `pid`, retrying when a signal interrupts the wait; its wait status.
pub fn wait_for_exit(pid: i32) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into our integer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if r < 0 && e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}
