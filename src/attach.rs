//! `stallscope attach PID`: record a window of a process that is already running.
//!
//! A process started with `stallscope run --paused` has the interposer loaded with recording off;
//! its flusher thread listens on the abstract Unix socket `stallscope-attach-PID`
//! (preload/attach.c). Attaching connects there, creates the profile (with this process's
//! rights) and sends its descriptor; the window stays open until the duration ends, Ctrl-C, or the
//! program exits, and closing it leaves the program running unrecorded. No ptrace, no signal.
//!
//! A process started otherwise would need the interposer injected with ptrace, which this
//! version does not do: the command says exactly why it cannot attach (a static or non-glibc
//! program, the permissions ptrace would need) and what to do instead.

use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod inject;
pub mod tree;
pub mod windows;

#[derive(clap::Args, Debug)]
pub struct AttachArgs {
    /// Write the profile to FILE (never overwritten) instead of stallscope-<name>-<pid>.attach.prof
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Record for SECONDS, then detach (default: until Ctrl-C or the program exits)
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// Print nothing but errors
    #[arg(short, long)]
    pub quiet: bool,
    /// With --push: record consecutive windows of DURATION each (e.g. 10s, 500ms), each pushed as
    /// it closes, until the process ends, --duration passes or Ctrl-C
    #[arg(long, value_name = "DURATION", value_parser = crate::run::parse_duration_ms, requires = "push")]
    pub every: Option<u64>,
    #[command(flatten)]
    pub push: crate::export::push::PushArgs,
    /// The process to record
    pub pid: u32,
}

const MAGIC: &[u8; 8] = b"SSATTACH";
const PROTOCOL: u32 = 1;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub fn main(args: AttachArgs) -> Result<i32> {
    let pid = args.pid;
    if pid == 0 || !Path::new(&format!("/proc/{pid}")).exists() {
        eprintln!("stallscope: no process {pid}");
        return Ok(2);
    }
    if let Some(d) = args.duration
        && !(d.is_finite() && d > 0.0 && d <= 7.0 * 86400.0)
    {
        eprintln!("stallscope: --duration must be a number of seconds above 0 (at most a week)");
        return Ok(2);
    }
    let target = match crate::export::push::Target::from_args(&args.push) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("stallscope: {e}");
            return Ok(2);
        }
    };
    if target.is_some() && args.output.is_some() {
        eprintln!("stallscope: --push sends each window to the server: give no -o");
        return Ok(2);
    }
    let stream = match open(pid) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    if let Some(target) = target {
        return windows::attach(pid, stream, target, &args);
    }
    let mut stream = stream;
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let path = match &args.output {
        Some(o) => cwd.join(o),
        None => default_path(&cwd, pid),
    };
    let file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("stallscope: cannot create {}: {e}", path.display());
            return Ok(2);
        }
    };
    send_request(&stream, &file, &path).context("sending the request to the process")?;
    drop(file);
    let reply = match read_line(&mut stream, Duration::from_secs(10)) {
        Ok(line) => line,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            eprintln!("stallscope: {pid} did not answer: {e}");
            return Ok(2);
        }
    };
    let Some(window) = reply.strip_prefix("OK ") else {
        let _ = std::fs::remove_file(&path);
        let why = reply.strip_prefix("ERR ").unwrap_or(&reply);
        eprintln!("stallscope: {pid} refused the attach: {why}");
        return Ok(2);
    };
    if !args.quiet {
        eprintln!(
            "stallscope: recording {pid} (window {window}) into {}{}",
            path.display(),
            match args.duration {
                Some(d) => format!(" for {d} s"),
                None => "; Ctrl-C detaches".to_string(),
            }
        );
    }
    let started = Instant::now();
    // SAFETY: the handler only stores to an atomic.
    let old_int = unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        )
    };
    let old_term = unsafe {
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        )
    };
    let ended = wait_window(&mut stream, args.duration.map(Duration::from_secs_f64));
    let detached = if ended {
        false
    } else {
        // Ask for the end of the window and wait for its last batch to be written.
        let _ = stream.write_all(b"S");
        matches!(
            read_line(&mut stream, Duration::from_secs(15)).as_deref(),
            Ok("DONE")
        )
    };
    // SAFETY: restoring the dispositions found.
    unsafe {
        libc::signal(libc::SIGINT, old_int);
        libc::signal(libc::SIGTERM, old_term);
    }
    let took = started.elapsed();
    if !args.quiet {
        let how = if detached {
            "detached; the process goes on".to_string()
        } else if ended {
            "the process ended (or closed the window) while recorded".to_string()
        } else {
            "the process did not confirm the end of the window".to_string()
        };
        eprintln!(
            "stallscope: {how} after {:.1} s; profile: {}",
            took.as_secs_f64(),
            path.display()
        );
        match crate::profile::read(&path) {
            Ok(p) => {
                let a = crate::analysis::summary::summarize(&p);
                if let Some(w) = a.attach {
                    eprintln!("stallscope: {}", crate::report::text::attach_text(&w));
                }
                if let Some(b) = a.sandbox {
                    eprintln!("stallscope: {}", b.describe());
                }
                eprintln!("stallscope: see `stallscope report {}`", path.display());
            }
            Err(e) => eprintln!("stallscope: the profile cannot be read: {e}"),
        }
    }
    Ok(0)
}

/// Connects to the process's listener, loading the interposer with ptrace first where it has
/// none; on failure, says why and gives the exit status.
fn open(pid: u32) -> std::result::Result<UnixStream, i32> {
    match connect(pid) {
        Ok(s) => Ok(s),
        Err(_) => {
            // Not started with `run --paused`: load the interposer into it with ptrace.
            if let Some(why) = refusal(pid) {
                eprintln!("stallscope: cannot attach to {pid}: {why}");
                return Err(2);
            }
            if let Err(why) = inject::inject(pid) {
                eprintln!(
                    "stallscope: cannot attach to {pid}: {why}. Or start it with `stallscope run --paused -- CMD`: it then records nothing until `stallscope attach PID`, and needs no ptrace"
                );
                return Err(2);
            }
            connect_within(pid, Duration::from_secs(5)).map_err(|e| {
                eprintln!(
                    "stallscope: the interposer was loaded into {pid} but does not answer: {e}"
                );
                2
            })
        }
    }
}

/// Connects to the listener of a paused process.
fn connect(pid: u32) -> std::io::Result<UnixStream> {
    use std::os::linux::net::SocketAddrExt;
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(format!("stallscope-attach-{pid}"))?;
    UnixStream::connect_addr(&addr)
}

/// Connects, retrying until the listener is up or `limit` passes.
fn connect_within(pid: u32, limit: Duration) -> std::io::Result<UnixStream> {
    let started = Instant::now();
    loop {
        match connect(pid) {
            Ok(s) => return Ok(s),
            Err(e) if started.elapsed() > limit => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// `stallscope-NAME-PID.attach.prof` in `dir`, or `.N.attach.prof` when taken.
fn default_path(dir: &Path, pid: u32) -> PathBuf {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let name = crate::run::profile_name_of(std::ffi::OsStr::new(comm.trim_end()));
    let mut path = dir.join(format!("stallscope-{name}-{pid}.attach.prof"));
    let mut n = 1;
    while std::fs::symlink_metadata(&path).is_ok() && n < 1000 {
        path = dir.join(format!("stallscope-{name}-{pid}.{n}.attach.prof"));
        n += 1;
    }
    path
}

/// The request: magic, protocol, the path's length, then the path; the file's descriptor rides
/// along (SCM_RIGHTS).
fn send_request(stream: &UnixStream, file: &std::fs::File, path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path_bytes = path.as_os_str().as_bytes();
    let mut head = Vec::with_capacity(16);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&PROTOCOL.to_le_bytes());
    head.extend_from_slice(&(path_bytes.len() as u32).to_le_bytes());
    let fd = file.as_raw_fd();
    // SAFETY: a msghdr pointing at live buffers, with one SCM_RIGHTS control message sized by
    // CMSG_SPACE; sendmsg only reads them.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: head.as_ptr() as *mut libc::c_void,
            iov_len: head.len(),
        };
        let space = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        let mut control = vec![0u8; space];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::copy_nonoverlapping(
            &fd as *const libc::c_int as *const u8,
            libc::CMSG_DATA(cmsg),
            std::mem::size_of::<libc::c_int>(),
        );
        if libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) != head.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut w = stream;
    w.write_all(path_bytes)
}

/// One line from the process, within `limit`.
fn read_line(stream: &mut UnixStream, limit: Duration) -> std::io::Result<String> {
    let deadline = Instant::now() + limit;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no answer in time",
            ));
        }
        stream.set_read_timeout(Some(left.min(Duration::from_millis(200))))?;
        match stream.read(&mut byte) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the connection closed",
                ));
            }
            Ok(_) if byte[0] == b'\n' => return Ok(String::from_utf8_lossy(&line).into_owned()),
            Ok(_) => line.push(byte[0]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Waits until the duration ends or Ctrl-C (returns false) or the process closes the connection:
/// it ended, or its window closed by itself (returns true).
fn wait_window(stream: &mut UnixStream, duration: Option<Duration>) -> bool {
    let started = Instant::now();
    let mut byte = [0u8; 16];
    loop {
        if INTERRUPTED.load(Ordering::SeqCst) || duration.is_some_and(|d| started.elapsed() >= d) {
            return false;
        }
        let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return true,
        }
    }
}

/// Why a process that is not listening cannot have the interposer loaded, if it cannot.
pub fn refusal(pid: u32) -> Option<String> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"));
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    // The image itself (/proc/PID/exe: also when its file was replaced or lies in another mount
    // namespace), else its path. A 32-bit process has a libc.so.6 too: made to call dlopen with
    // x86-64's registers, it would run with arguments it never passed.
    let image = std::fs::File::open(format!("/proc/{pid}/exe"))
        .or_else(|e| exe.as_ref().map_err(|_| e).and_then(std::fs::File::open));
    if let Ok(file) = image
        && let Some(why) =
            crate::run::image_refusal(file, exe.as_ref().ok().and_then(|e| e.file_name()), || {
                std::fs::read(format!("/proc/{pid}/exe")).ok()
            })
    {
        let name = exe.map_or_else(|_| format!("process {pid}"), |e| e.display().to_string());
        return Some(format!("{name} ({why}); it cannot load the interposer"));
    }
    if maps.contains("libstallscope") {
        return Some("it was started under `stallscope run`, which records it from its start already (or it is starting up, or it changed its user and its attach listener left): attach opens windows in programs started with `stallscope run --paused`, or in programs started without stallscope".to_string());
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(why) = seccomp_refusal(pid, &status, &own) {
        return Some(why);
    }
    if !maps.is_empty() && !maps.contains("/libc.so.6") {
        return Some(
            "it does not use glibc (no libc.so.6 among its loaded objects), and the interposer needs glibc"
                .into(),
        );
    }
    None
}

/// The first word of field `name` ("Uid", "TracerPid", ...) in a /proc/PID/status text.
pub(crate) fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
}

/// A /proc/PID/status text's seccomp state: the mode (0 none, 1 strict, 2 filters) and, since
/// Linux 5.9, how many filters the process has.
fn seccomp_of(status: &str) -> (u32, Option<u32>) {
    let field = |name| status_field(status, name).and_then(|v| v.parse::<u32>().ok());
    (field("Seccomp").unwrap_or(0), field("Seccomp_filters"))
}

/// Why a process under seccomp must not have the interposer loaded, if it must not (`target`,
/// `own`: its /proc/PID/status text and stallscope's). A filter may kill the process for any
/// system call it did not expect, and loading the interposer makes many: systemd's
/// `SystemCallFilter=`, OpenSSH's privilege separation and browsers' sandboxes kill
/// (tests/attach_programs/sandboxed.c died of SIGSYS at dlopen's first open). Whether a filter
/// kills or only refuses cannot be read without CAP_SYS_ADMIN. Filters that are no more than
/// those stallscope itself runs under (a container's, inherited by every process in it: Docker's
/// refuses, never kills) have let stallscope make the same calls already.
fn seccomp_refusal(pid: u32, target: &str, own: &str) -> Option<String> {
    let (mode, filters) = seccomp_of(target);
    let (own_mode, own_filters) = seccomp_of(own);
    let only_ours = mode == 2
        && own_mode == 2
        && matches!((filters, own_filters), (Some(t), Some(o)) if t <= o);
    if mode == 0 || only_ours {
        return None;
    }
    Some(format!(
        "it runs under a seccomp {} (Seccomp: {mode} in /proc/{pid}/status{}), which may kill it for a system call that loading the interposer makes",
        if mode == 1 { "strict mode" } else { "filter" },
        match (filters, own_filters) {
            (Some(t), Some(o)) if mode == 2 && own_mode == 2 =>
                format!("; {t} filters against the {o} stallscope runs under"),
            _ => String::new(),
        }
    ))
}

/// Why ptrace (PTRACE_MODE_ATTACH) would be refused to this process, if it would: Yama's
/// ptrace_scope, the capability, another user.
pub fn ptrace_denied(pid: u32) -> Option<String> {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    // SAFETY: plain system calls without arguments.
    let (uid, euid) = unsafe { (libc::getuid(), libc::geteuid()) };
    let owner = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| status_field(&s, "Uid")?.parse::<u32>().ok());
    let other_user = owner.filter(|&o| o != uid && o != euid);
    ptrace_denial(scope, has_cap_sys_ptrace(), other_user)
}

/// The rule of [`ptrace_denied`], from what it read: Yama's `ptrace_scope` (None: no Yama),
/// whether this process has CAP_SYS_PTRACE, the target's user when it is not ours. A target
/// that is not a descendant is assumed (attach never starts it).
pub fn ptrace_denial(
    scope: Option<u32>,
    cap_sys_ptrace: bool,
    other_user: Option<u32>,
) -> Option<String> {
    match scope {
        Some(3) => {
            return Some(
                "/proc/sys/kernel/yama/ptrace_scope is 3: no process may be traced until the next boot"
                    .into(),
            );
        }
        Some(2) if !cap_sys_ptrace => {
            return Some("/proc/sys/kernel/yama/ptrace_scope is 2: only a tracer with CAP_SYS_PTRACE may attach; run as root (sudo)".into());
        }
        Some(1) if !cap_sys_ptrace => {
            return Some("/proc/sys/kernel/yama/ptrace_scope is 1 (Ubuntu's default): only a process's ancestors may trace it; run as root or with CAP_SYS_PTRACE, or set it to 0 with `sudo sysctl kernel.yama.ptrace_scope=0`".into());
        }
        _ => {}
    }
    match other_user {
        Some(owner) if !cap_sys_ptrace => Some(format!(
            "the process belongs to user {owner}: run as that user, or as root"
        )),
        _ => None,
    }
}

fn has_cap_sys_ptrace() -> bool {
    const CAP_SYS_PTRACE: u32 = 19;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| u64::from_str_radix(status_field(&s, "CapEff")?, 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_PTRACE) != 0)
}

#[cfg(test)]
mod tests {
    use super::ptrace_denial;

    #[test]
    fn a_status_field_is_its_first_word() {
        let status = "Name:\tx\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000080000\nSeccomp:\t2\nSeccomp_filters:\t3\n";
        assert_eq!(super::status_field(status, "Uid"), Some("1000"));
        assert_eq!(super::status_field(status, "TracerPid"), Some("0"));
        assert_eq!(
            super::status_field(status, "CapEff"),
            Some("0000000000080000")
        );
        assert_eq!(super::status_field(status, "Seccomp"), Some("2"));
        assert_eq!(super::status_field(status, "Seccomp_filters"), Some("3"));
        assert_eq!(super::status_field(status, "NoNewPrivs"), None);
    }

    #[test]
    fn a_process_under_seccomp_is_refused_unless_its_filters_are_stallscopes_own() {
        let status = |mode: u32, filters: Option<u32>| {
            let mut s = format!("Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t{mode}\n");
            if let Some(f) = filters {
                s.push_str(&format!("Seccomp_filters:\t{f}\n"));
            }
            s
        };
        let free = status(0, Some(0));
        assert_eq!(super::seccomp_refusal(7, &free, &free), None);
        // A sandbox stallscope is not in: refused, strict mode too.
        let why = super::seccomp_refusal(7, &status(2, Some(1)), &free).unwrap();
        assert!(
            why.contains("seccomp filter (Seccomp: 2 in /proc/7/status)"),
            "{why}"
        );
        let why = super::seccomp_refusal(7, &status(1, Some(0)), &free).unwrap();
        assert!(why.contains("seccomp strict mode"), "{why}");
        // Both in one container's filter: the process may be attached; a filter of its own more
        // is refused, and so is a count the kernel does not give (before Linux 5.9).
        assert_eq!(
            super::seccomp_refusal(7, &status(2, Some(1)), &status(2, Some(1))),
            None
        );
        let why = super::seccomp_refusal(7, &status(2, Some(2)), &status(2, Some(1))).unwrap();
        assert!(
            why.contains("2 filters against the 1 stallscope runs under"),
            "{why}"
        );
        assert!(super::seccomp_refusal(7, &status(2, None), &status(2, None)).is_some());
        // No status (the process is gone): nothing to refuse here.
        assert_eq!(super::seccomp_refusal(7, "", &free), None);
    }

    #[test]
    fn yama_scopes_and_capability() {
        assert_eq!(ptrace_denial(None, false, None), None);
        assert_eq!(ptrace_denial(Some(0), false, None), None);
        let one = ptrace_denial(Some(1), false, None).unwrap();
        assert!(
            one.contains("is 1") && one.contains("CAP_SYS_PTRACE") && one.contains("sysctl"),
            "{one}"
        );
        assert_eq!(ptrace_denial(Some(1), true, None), None);
        let two = ptrace_denial(Some(2), false, None).unwrap();
        assert!(
            two.contains("is 2") && two.contains("CAP_SYS_PTRACE"),
            "{two}"
        );
        assert_eq!(ptrace_denial(Some(2), true, None), None);
        // 3: never, not even with the capability.
        let three = ptrace_denial(Some(3), true, None).unwrap();
        assert!(
            three.contains("is 3") && three.contains("next boot"),
            "{three}"
        );
        let other = ptrace_denial(Some(0), false, Some(1000)).unwrap();
        assert!(other.contains("user 1000"), "{other}");
        assert_eq!(ptrace_denial(Some(0), true, Some(1000)), None);
    }
}
