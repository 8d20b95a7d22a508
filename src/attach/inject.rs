//! Loading the interposer into a running process that was not started under stallscope, with
//! ptrace: one thread that is waiting in a system call is stopped (the others keep running),
//! made to call `dlopen` (exported by libc.so.6 since glibc 2.34) on the interposer under the
//! name that tells it it was loaded this way (preload/attach.c), and put back exactly as it was:
//! its registers restored, its system call restarted by the kernel. The library's constructor
//! starts the interposer's own thread, paused; `attach` then talks to it as to a process started
//! with `run --paused`.
//!
//! The stopped thread runs `dlopen` where it was: it must hold no lock `dlopen` needs (the
//! loader's, malloc's). A thread blocked in a system call is chosen, preferring calls that the
//! kernel restarts transparently; a thread interrupted in `epoll_wait` or `select` sees EINTR,
//! as under a debugger.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The address of `dlopen` in the target's libc.so.6, or why there is none.
fn dlopen_address(pid: u32) -> Result<u64, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("cannot read /proc/{pid}/maps: {e}"))?;
    let mut libc: Option<(u64, String)> = None;
    for line in maps.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 || !fields[5].ends_with("/libc.so.6") {
            continue;
        }
        let offset = u64::from_str_radix(fields[2], 16).unwrap_or(1);
        let start = fields[0]
            .split('-')
            .next()
            .and_then(|s| u64::from_str_radix(s, 16).ok());
        if let (0, Some(start)) = (offset, start) {
            libc = Some((start, fields[5].to_string()));
            break;
        }
    }
    let Some((start, path)) = libc else {
        return Err("it does not use glibc (no libc.so.6 among its loaded objects), and the interposer needs glibc".into());
    };
    let file = Path::new(&format!("/proc/{pid}/root")).join(path.trim_start_matches('/'));
    let data = std::fs::read(&file)
        .or_else(|_| std::fs::read(&path))
        .map_err(|e| format!("cannot read its C library {path}: {e}"))?;
    use object::{Object, ObjectSegment, ObjectSymbol};
    let elf = object::File::parse(&*data).map_err(|e| format!("{path}: {e}"))?;
    // The load bias: where the segment at file offset 0 was mapped, less its address.
    let first_vaddr = elf
        .segments()
        .find(|s| s.file_range().0 == 0)
        .map_or(0, |s| s.address());
    let bias = start.wrapping_sub(first_vaddr);
    elf.dynamic_symbols()
        .find(|s| s.name() == Ok("dlopen") && s.address() != 0)
        .map(|s| bias.wrapping_add(s.address()))
        .ok_or_else(|| {
            format!("its C library ({path}) exports no dlopen: glibc before 2.34 keeps it in libdl, which the process may not have loaded")
        })
}

/// System calls in which a thread may be stopped and made to call dlopen, best first (the kernel
/// restarts the first ones unseen; epoll_wait and select return EINTR).
const BLOCKING: [i64; 20] = [
    202, // futex
    230, // clock_nanosleep
    35,  // nanosleep
    0,   // read
    45,  // recvfrom
    47,  // recvmsg
    43,  // accept
    288, // accept4
    61,  // wait4
    7,   // poll
    271, // ppoll
    34,  // pause
    130, // rt_sigsuspend
    128, // rt_sigtimedwait
    23,  // select
    270, // pselect6
    232, // epoll_wait
    281, // epoll_pwait
    441, // epoll_pwait2
    17,  // pread64
];

/// A thread of `pid` blocked in one of BLOCKING, the best one.
fn waiting_thread(pid: u32) -> Option<u32> {
    let mut best: Option<(usize, u32)> = None;
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Some(tid) = entry
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == "stallscope" {
            continue;
        }
        let text = std::fs::read_to_string(entry.path().join("syscall")).unwrap_or_default();
        let Some(nr) = text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue; // "running" or unreadable
        };
        if let Some(rank) = BLOCKING.iter().position(|&b| b == nr)
            && best.is_none_or(|(r, _)| rank < r)
        {
            best = Some((rank, tid));
        }
    }
    best.map(|(_, tid)| tid)
}

/// The interposer under the name that tells it it was loaded by attach (a link next to it).
fn library_for_attach() -> Result<PathBuf, String> {
    let lib = crate::preload::library_path().map_err(|e| format!("{e:#}"))?;
    let name = lib
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("the interposer's path has no name")?;
    let link = lib.with_file_name(name.replacen("libstallscope", "libstallscope-attach", 1));
    if std::fs::read_link(&link).ok().as_deref() != Some(Path::new(name)) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(name, &link)
            .map_err(|e| format!("cannot create {}: {e}", link.display()))?;
    }
    Ok(link)
}

fn ptrace(req: libc::c_uint, tid: u32, addr: usize, data: usize) -> std::io::Result<libc::c_long> {
    // SAFETY: ptrace with integer arguments or pointers to live buffers of the right type.
    let r = unsafe {
        libc::ptrace(
            req,
            tid as libc::pid_t,
            addr as *mut libc::c_void,
            data as *mut libc::c_void,
        )
    };
    if r == -1 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn get_regs(tid: u32) -> std::io::Result<libc::user_regs_struct> {
    // SAFETY: an all-zero user_regs_struct is valid; PTRACE_GETREGS fills it.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    ptrace(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize)?;
    Ok(regs)
}

fn set_regs(tid: u32, regs: &libc::user_regs_struct) -> std::io::Result<()> {
    ptrace(libc::PTRACE_SETREGS, tid, 0, regs as *const _ as usize).map(|_| ())
}

/// Waits for the next stop of `tid` (None: it exited, or the limit passed).
fn wait_stop(tid: u32, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid on a traced thread, with a live status word.
        let r = unsafe {
            libc::waitpid(
                tid as libc::pid_t,
                &mut status,
                libc::__WALL | libc::WNOHANG,
            )
        };
        if r == tid as libc::pid_t {
            if libc::WIFSTOPPED(status) {
                return Some(status);
            }
            return None; // exited or killed
        }
        if r < 0 || started.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Makes `pid` load the interposer. Returns an explanation when it cannot; the process is never
/// left stopped.
pub fn inject(pid: u32) -> Result<(), String> {
    if let Some(why) = super::ptrace_denied(pid) {
        return Err(format!("ptrace would be refused: {why}"));
    }
    let tracer = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| super::status_field(&s, "TracerPid")?.parse::<u32>().ok())
        .unwrap_or(0);
    if tracer != 0 {
        return Err(format!(
            "it is being traced by process {tracer} (a debugger, strace), and a process has one tracer at a time"
        ));
    }
    let dlopen = dlopen_address(pid)?;
    let tid = waiting_thread(pid).ok_or(
        "none of its threads is waiting in a system call (a thread stopped while it runs could hold a lock dlopen needs); try again when it is less busy",
    )?;
    if let Err(e) = ptrace(libc::PTRACE_SEIZE, tid, 0, 0) {
        let mut why = format!("ptrace refused ({e})");
        if let Some(reason) = super::ptrace_denied(pid) {
            why.push_str(": ");
            why.push_str(&reason);
        }
        return Err(why);
    }
    let result = library_for_attach().and_then(|lib| call_dlopen(pid, tid, dlopen, &lib));
    // Never left stopped or traced, whatever happened.
    let _ = ptrace(libc::PTRACE_DETACH, tid, 0, 0);
    result
}

fn call_dlopen(pid: u32, tid: u32, dlopen: u64, lib: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    ptrace(libc::PTRACE_INTERRUPT, tid, 0, 0).map_err(|e| format!("ptrace interrupt: {e}"))?;
    if wait_stop(tid, Duration::from_secs(5)).is_none() {
        return Err("the thread did not stop".into());
    }
    let saved = get_regs(tid).map_err(|e| format!("reading registers: {e}"))?;
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{pid}/mem"))
        .map_err(|e| format!("opening its memory: {e}"))?;
    // Below the red zone: the path, then a return address of 0 that ends the call with SIGSEGV.
    let mut path = lib.as_os_str().as_bytes().to_vec();
    path.push(0);
    let string_at = (saved.rsp - 512 - path.len() as u64) & !15;
    let return_at = ((string_at - 64) & !15) - 8;
    let written = mem
        .write_all_at(&path, string_at)
        .and_then(|_| mem.write_all_at(&0u64.to_le_bytes(), return_at));
    if let Err(e) = written {
        let _ = set_regs(tid, &saved);
        return Err(format!("writing its stack: {e}"));
    }
    let mut regs = saved;
    regs.rip = dlopen;
    regs.rdi = string_at;
    regs.rsi = libc::RTLD_NOW as u64;
    regs.rsp = return_at;
    regs.rax = 0;
    regs.orig_rax = u64::MAX; // no system call to restart on the way
    set_regs(tid, &regs).map_err(|e| format!("setting registers: {e}"))?;
    let mut deliver = 0usize;
    let outcome = loop {
        if let Err(e) = ptrace(libc::PTRACE_CONT, tid, 0, deliver) {
            break Err(format!("resuming: {e}"));
        }
        deliver = 0;
        let Some(status) = wait_stop(tid, Duration::from_secs(30)) else {
            break Err("dlopen did not return within 30 s (or the process ended)".into());
        };
        let sig = libc::WSTOPSIG(status);
        if status >> 16 != 0 {
            continue; // an event stop (group stop): go on
        }
        if sig == libc::SIGSEGV {
            match get_regs(tid) {
                Ok(r) if r.rip == 0 => break Ok(r.rax),
                _ => {}
            }
        }
        deliver = sig as usize; // the program's own signal: it gets it
    };
    let restored = set_regs(tid, &saved);
    let handle = outcome?;
    restored.map_err(|e| format!("restoring registers: {e}"))?;
    if handle == 0 {
        return Err(format!(
            "its dlopen of {} failed (a library needing more static TLS than the process has left, or a file it cannot read)",
            lib.display()
        ));
    }
    Ok(())
}
