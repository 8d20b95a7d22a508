//! The conformance harness: runs one command plainly and under `stallscope run -q`, in
//! the same conditions (signal dispositions, mask, limits, closed descriptors, environment, stdin,
//! working directory), and checks that the program could not tell: the same wait status (exit
//! code, or the signal that killed it), the same stdout and stderr, and memory bounded by the plain
//! run's. Any program can be plugged in: describe how to start it with a `Launch`, then call
//! `assert_invisible` (or `run_both` and compare what matters for that program).
//! Nothing here asserts a duration: times only bound how long a hung run may take.
#![allow(dead_code)] // each test binary uses a different subset

use crate::common::{TempDir, stallscope};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How to start a program, identically for both runs.
#[derive(Clone, Debug)]
pub struct Launch {
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    /// Variables added to (or replacing in) the test's environment.
    pub env: Vec<(OsString, OsString)>,
    pub stdin: Vec<u8>,
    /// Signals set to "ignore" (every other signal is set to its default action).
    pub ignore: Vec<i32>,
    /// Signals blocked.
    pub block: Vec<i32>,
    /// Standard descriptors (0, 1, 2) closed.
    pub close: Vec<i32>,
    /// Soft RLIMIT_NOFILE, when set.
    pub nofile: Option<u64>,
    /// A run still going after this has hung: it and its descendants are killed and the test fails.
    pub timeout: Duration,
    /// Extra `stallscope run` options (besides `-q` and `-o`).
    pub run_args: Vec<String>,
}

impl Launch {
    pub fn new<S: AsRef<OsStr>>(argv: &[S], cwd: &Path) -> Launch {
        Launch {
            argv: argv.iter().map(|a| a.as_ref().to_owned()).collect(),
            cwd: cwd.to_path_buf(),
            env: Vec::new(),
            stdin: Vec::new(),
            ignore: Vec::new(),
            block: Vec::new(),
            close: Vec::new(),
            nofile: None,
            timeout: Duration::from_secs(60),
            run_args: Vec::new(),
        }
    }

    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Launch {
        self.env.push((key.into(), value.as_ref().to_owned()));
        self
    }

    pub fn stdin(mut self, data: &[u8]) -> Launch {
        self.stdin = data.to_vec();
        self
    }

    pub fn timeout(mut self, limit: Duration) -> Launch {
        self.timeout = limit;
        self
    }

    pub fn run_args(mut self, args: &[&str]) -> Launch {
        self.run_args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// The command, either as given or behind `stallscope run -q -o PROFILE [run_args] --`.
    fn command(&self, profile: Option<&Path>) -> Command {
        let mut c = match profile {
            None => {
                let mut c = Command::new(&self.argv[0]);
                c.args(&self.argv[1..]);
                c
            }
            Some(path) => {
                let mut c = Command::new(stallscope());
                c.args(["run", "-q", "-o"])
                    .arg(path)
                    .args(&self.run_args)
                    .arg("--")
                    .args(&self.argv);
                c
            }
        };
        c.current_dir(&self.cwd);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        let setup = ChildSetup {
            ignore: self.ignore.clone(),
            block: self.block.clone(),
            close: self.close.clone(),
            nofile: self.nofile,
        };
        // SAFETY: the closure only makes async-signal-safe system calls.
        unsafe {
            c.pre_exec(move || {
                setup.apply();
                Ok(())
            });
        }
        c
    }
}

/// The inherited state of a launch, applied in the child between fork and exec.
struct ChildSetup {
    ignore: Vec<i32>,
    block: Vec<i32>,
    close: Vec<i32>,
    nofile: Option<u64>,
}

impl ChildSetup {
    fn apply(&self) {
        // SAFETY: plain system calls on values owned by the closure; no allocation.
        unsafe {
            for sig in 1..=64 {
                if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                    continue;
                }
                let action = if self.ignore.contains(&sig) {
                    libc::SIG_IGN
                } else {
                    libc::SIG_DFL
                };
                libc::signal(sig, action);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &sig in &self.block {
                libc::sigaddset(&mut set, sig);
            }
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            if let Some(n) = self.nofile {
                let mut rl = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
                rl.rlim_cur = n;
                libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
            }
            for &fd in &self.close {
                libc::close(fd);
            }
        }
    }
}

/// What a run left: its wait status, its output, and the peak resident memory of the largest
/// program in its tree (stallscope's own supervisor process left out).
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub max_rss_kib: u64,
}

impl Outcome {
    pub fn describe(&self) -> String {
        format!(
            "status: {:?}, peak RSS {} KiB\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.max_rss_kib,
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// Runs `c` with piped stdio, feeding `stdin`; kills the whole tree after `limit`.
#[allow(clippy::zombie_processes)] // reaped by waitpid in wait_within (which needs the raw status)
pub fn run_command(mut c: Command, stdin: &[u8], limit: Duration) -> Outcome {
    let description = format!("{c:?}");
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {description}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data); // the program may not read it all
    });
    let readers: Vec<std::thread::JoinHandle<Vec<u8>>> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|mut pipe| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    })
    .collect();
    let (status, max_rss_kib) = wait_within(child.id() as i32, limit, &description);
    let _ = writer.join();
    let mut out: Vec<Vec<u8>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let stderr = out.pop().unwrap();
    let stdout = out.pop().unwrap();
    Outcome {
        status,
        stdout,
        stderr,
        max_rss_kib,
    }
}

/// Waits for `pid`, killing it and its descendants after `limit`. Meanwhile it reads the memory
/// high-water mark (VmHWM) of every process in the tree every few milliseconds; returns the wait
/// status and the largest mark seen. (wait4's ru_maxrss would count the test process's own size:
/// a forked child keeps its pre-exec high-water mark.)
pub fn wait_within(pid: i32, limit: Duration, description: &str) -> (ExitStatus, u64) {
    let start = Instant::now();
    let mut peak = 0u64;
    loop {
        for p in std::iter::once(pid).chain(descendants(pid)) {
            peak = peak.max(high_water_kib(p));
        }
        let mut status = 0;
        // SAFETY: waitpid writes the status.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return (ExitStatus::from_raw(status), peak);
        }
        assert!(
            r == 0,
            "waitpid for {description}: {}",
            std::io::Error::last_os_error()
        );
        if start.elapsed() > limit {
            kill_tree(pid);
            let mut status = 0;
            // SAFETY: reaps the killed child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            panic!("{description} was still running after {limit:?} (hung); killed it");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// VmHWM of a process in KiB; 0 for stallscope's own supervisor (not the program) or when gone.
fn high_water_kib(pid: i32) -> u64 {
    let is_supervisor = std::fs::read_link(format!("/proc/{pid}/exe"))
        .is_ok_and(|exe| exe == Path::new(stallscope()));
    if is_supervisor {
        return 0;
    }
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Sends SIGKILL to `pid` and all its descendants (found through /proc, deepest first).
pub fn kill_tree(pid: i32) {
    for child in descendants(pid).into_iter().rev() {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Every descendant of `pid`, parents before their children.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                for c in text.split_whitespace().filter_map(|c| c.parse().ok()) {
                    out.push(c);
                    queue.push(c);
                }
            }
        }
    }
    out
}

/// The plain run and the profiled run of one launch.
pub struct Pair {
    pub plain: Outcome,
    pub profiled: Outcome,
    /// The profile the profiled run wrote (`-o`), in a directory of its own.
    pub profile: PathBuf,
    _profiles: TempDir,
}

impl Pair {
    pub fn describe(&self) -> String {
        format!(
            "=== plain ===\n{}\n=== under stallscope ===\n{}",
            self.plain.describe(),
            self.profiled.describe()
        )
    }
}

/// Runs `launch` plainly.
pub fn run_plain(launch: &Launch) -> Outcome {
    run_command(launch.command(None), &launch.stdin, launch.timeout)
}

/// Runs `launch` under `stallscope run -q -o PROFILE`.
pub fn run_profiled(launch: &Launch, profile: &Path) -> Outcome {
    run_command(launch.command(Some(profile)), &launch.stdin, launch.timeout)
}

/// Runs `launch` plainly, then under `stallscope run -q -o <a directory of its own>`.
pub fn run_both(launch: &Launch) -> Pair {
    run_both_with(launch, launch)
}

/// Like `run_both`, with a launch of its own for the profiled run (another working directory,
/// for programs that change theirs).
pub fn run_both_with(plain: &Launch, profiled: &Launch) -> Pair {
    let profiles = TempDir::new("harness-profiles");
    let profile = profiles.join("run.prof");
    let plain = run_plain(plain);
    let profiled = run_profiled(profiled, &profile);
    Pair {
        plain,
        profiled,
        profile,
        _profiles: profiles,
    }
}

/// Memory the profiled run may use beyond the plain run's: the interposer's per-thread records
/// and buffers, and the supervisor itself. A bound, not a measurement (benches/ measure).
pub const EXTRA_RSS_KIB: u64 = 64 * 1024;

/// Asserts that the program could not tell it was profiled: same wait status, same stdout and
/// stderr, and a peak RSS at most twice the plain run's plus `EXTRA_RSS_KIB`.
pub fn assert_same(pair: &Pair) {
    assert_eq!(
        pair.profiled.status.into_raw(),
        pair.plain.status.into_raw(),
        "different wait status ({:?} plain, {:?} under stallscope)\n{}",
        pair.plain.status,
        pair.profiled.status,
        pair.describe()
    );
    assert!(
        pair.profiled.stdout == pair.plain.stdout,
        "different stdout\n{}",
        pair.describe()
    );
    assert!(
        pair.profiled.stderr == pair.plain.stderr,
        "different stderr\n{}",
        pair.describe()
    );
    assert_memory_bounded(pair);
}

pub fn assert_memory_bounded(pair: &Pair) {
    let bound = 2 * pair.plain.max_rss_kib + EXTRA_RSS_KIB;
    if std::env::var_os("STALLSCOPE_HARNESS_VERBOSE").is_some() {
        eprintln!(
            "peak RSS: {} KiB plain, {} KiB under stallscope ({})",
            pair.plain.max_rss_kib,
            pair.profiled.max_rss_kib,
            pair.profile.display()
        );
    }
    assert!(
        pair.profiled.max_rss_kib <= bound,
        "peak RSS {} KiB under stallscope, {} KiB plain (bound {bound} KiB)\n{}",
        pair.profiled.max_rss_kib,
        pair.plain.max_rss_kib,
        pair.describe()
    );
}

/// `run_both` then `assert_same`.
pub fn assert_invisible(launch: &Launch) -> Pair {
    let pair = run_both(launch);
    assert_same(&pair);
    pair
}

/// A run inside a pseudo-terminal of its own (a new session whose controlling terminal it is, as
/// in a terminal window): waits for `ready` in the output, then types `keys` (b"\x03" is Ctrl-C).
/// Returns the wait status and everything the terminal showed.
#[allow(clippy::zombie_processes)] // reaped by waitpid in wait_within
pub fn run_in_terminal(mut c: Command, ready: &str, keys: &[u8], limit: Duration) -> Outcome {
    let (mut master, slave) = open_pty();
    let slave_fd = slave;
    // SAFETY: setsid, ioctl and dup2 are async-signal-safe; the descriptors are ours.
    unsafe {
        c.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(slave_fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            for fd in 0..3 {
                libc::dup2(slave_fd, fd);
            }
            Ok(())
        });
    }
    let description = format!("{c:?}");
    let child = c
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {description} in a terminal: {e}"));
    // SAFETY: the parent's copy of the slave side is no longer needed.
    unsafe { libc::close(slave) };
    let pid = child.id() as i32;
    let start = Instant::now();
    let mut shown = Vec::new();
    let mut typed = false;
    let mut buf = [0u8; 4096];
    loop {
        let mut pfd = libc::pollfd {
            fd: master.as_raw(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, 50) };
        if n > 0 {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break, // EIO: every process holding the terminal is gone
                Ok(n) => shown.extend_from_slice(&buf[..n]),
            }
        }
        if !typed && String::from_utf8_lossy(&shown).contains(ready) {
            master.write_all(keys).expect("typing into the terminal");
            typed = true;
        }
        if start.elapsed() > limit {
            kill_tree(pid);
            panic!(
                "{description} was still running in its terminal after {limit:?}; it showed:\n{}",
                String::from_utf8_lossy(&shown)
            );
        }
    }
    let (status, max_rss_kib) = wait_within(pid, limit, &description);
    Outcome {
        status,
        stdout: shown,
        stderr: Vec::new(),
        max_rss_kib,
    }
}

/// The master side of a pseudo-terminal, closed when dropped.
pub struct PtyMaster(i32);

impl PtyMaster {
    fn as_raw(&self) -> i32 {
        self.0
    }
}

impl Read for PtyMaster {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: reads into a buffer we own.
        let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

impl Write for PtyMaster {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: writes from a buffer we own.
        let n = unsafe { libc::write(self.0, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for PtyMaster {
    fn drop(&mut self) {
        // SAFETY: our descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// A new pseudo-terminal: (master, slave descriptor). Both are close-on-exec in this process.
fn open_pty() -> (PtyMaster, i32) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty fills two descriptors; the name, termios and size are left default.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    for fd in [master, slave] {
        // SAFETY: our descriptors.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    (PtyMaster(master), slave)
}

/// `stallscope run -q -o PROFILE [args] -- argv`, as a Command (for the terminal runs).
pub fn profiled_command<S: AsRef<OsStr>>(
    profile: &Path,
    args: &[&str],
    argv: &[S],
    cwd: &Path,
) -> Command {
    let mut c = Command::new(stallscope());
    c.args(["run", "-q", "-o"])
        .arg(profile)
        .args(args)
        .arg("--")
        .args(argv)
        .current_dir(cwd);
    c
}

/// The same program as a Command (the plain counterpart of `profiled_command`).
pub fn plain_command<S: AsRef<OsStr>>(argv: &[S], cwd: &Path) -> Command {
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]).current_dir(cwd);
    c
}

/// Compiles tests/hostile_programs/`name` into `dir` (see common::compile_file).
pub fn hostile_program(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile_programs")
        .join(name);
    crate::common::compile_file(dir, &src, extra)
}
