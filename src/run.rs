//! `stallscope run`: launch a program with the interposer preloaded, pass its I/O, signals and
//! exit status through unchanged, then summarise the profile it wrote.

use crate::profile::{self, format};
use crate::report::summary::{self, Summary};
use crate::util::{Style, fmt_count, fmt_ns, fmt_pct};
use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Write the profile to FILE (never overwritten) instead of stallscope-<command>-<pid>.prof
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Profile only the launched process, not the processes it starts
    #[arg(long)]
    pub no_children: bool,
    /// Time a random sample of allocator calls (counts stay exact), or every call
    #[arg(long, value_enum, default_value_t = Timing::Sampled)]
    pub timing: Timing,
    /// Mean sampling period for --timing sampled: one call in N is timed
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub timing_period: u32,
    /// Take the call stack of one allocation call in N on average (0: none by count)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub stack_period: u32,
    /// Also take a stack once per BYTES allocated on average, so large calls are represented by
    /// size (0: none by size); --no-stacks turns both off
    #[arg(long, value_name = "BYTES", default_value_t = 512 * 1024)]
    pub stack_bytes: u64,
    /// Record no allocation call stacks
    #[arg(long)]
    pub no_stacks: bool,
    /// How stacks are unwound: libgcc's unwinder (.eh_frame; stops where tables are missing), or
    /// libunwind's (Debian libunwind8; 20-50x faster, but guesses from frame pointers where
    /// tables are missing); see docs/STACKS.md
    #[arg(long, value_enum, default_value_t = Unwinder::Libgcc)]
    pub unwinder: Unwinder,
    /// Take a heap snapshot every DURATION (e.g. 500ms, 2s) besides those at start, exit and phase boundaries
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms)]
    pub snapshot_every: Option<u64>,
    /// Take a heap snapshot when the program receives SIGUSR2 (installs a handler for that signal)
    #[arg(long)]
    pub snapshot_on_signal: bool,
    /// Thread-state CPU samples per second of each thread's CPU time (0: none); see docs/STATES.md
    #[arg(long, value_name = "HZ", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=10000))]
    pub sample_hz: u32,
    /// Wall-clock samples per second of threads that are not running (0: none)
    #[arg(long, value_name = "HZ", default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub wall_hz: u32,
    /// No thread-state sampling at all (the same as --sample-hz 0 --wall-hz 0)
    #[arg(long)]
    pub no_sampling: bool,
    /// Print no summary after the run
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to profile, with its arguments
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwinder {
    Libgcc,
    Libunwind,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    Sampled,
    Exact,
}

/// The launched process, for the signal handler that forwards termination requests to it.
static CHILD_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD_PID.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, sig) };
    }
}

pub fn main(args: RunArgs) -> Result<i32> {
    let program = match resolve_program(&args.command[0]) {
        Some(p) => p,
        None => {
            eprintln!("stallscope: {}: command not found", args.command[0]);
            return Ok(127);
        }
    };
    if let Err(reason) = check_preloadable(&program, 0) {
        eprintln!("stallscope: cannot profile {}: {reason}", program.display());
        eprintln!(
            "stallscope: the program was not run (a profile needs LD_PRELOAD, which it would ignore)"
        );
        return Ok(2);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let output = args.output.as_ref().map(|o| cwd.join(o));
    if let Some(out) = output.as_ref().filter(|o| o.exists()) {
        eprintln!(
            "stallscope: {} exists; refusing to overwrite it",
            out.display()
        );
        return Ok(2);
    }
    let library = crate::preload::library_path()?;
    let session = Session::create()?;

    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    let preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{} {existing}", library.display()),
        _ => library.display().to_string(),
    };
    cmd.env("LD_PRELOAD", preload)
        .env("STALLSCOPE_DIR", &cwd)
        .env("STALLSCOPE_INDEX", &session.index)
        .env("STALLSCOPE_SUPERVISOR", std::process::id().to_string())
        .env(
            "STALLSCOPE_TIMING",
            if args.timing == Timing::Exact {
                "exact"
            } else {
                "sampled"
            },
        )
        .env(
            "STALLSCOPE_TIMING_PERIOD",
            args.timing_period.max(1).to_string(),
        );
    if let Some(out) = &output {
        cmd.env("STALLSCOPE_OUTPUT", out);
    }
    if args.no_children {
        cmd.env("STALLSCOPE_NO_CHILDREN", "1");
    }
    if let Some(ms) = args.snapshot_every {
        cmd.env("STALLSCOPE_SNAPSHOT_MS", ms.max(1).to_string());
    }
    if args.snapshot_on_signal {
        cmd.env("STALLSCOPE_SNAPSHOT_SIGNAL", "1");
    }
    let (sample_hz, wall_hz) = if args.no_sampling {
        (0, 0)
    } else {
        (args.sample_hz, args.wall_hz)
    };
    cmd.env("STALLSCOPE_SAMPLE_HZ", sample_hz.to_string())
        .env("STALLSCOPE_WALL_HZ", wall_hz.to_string());
    let (stack_period, stack_bytes) = if args.no_stacks {
        (0, 0)
    } else {
        (args.stack_period, args.stack_bytes)
    };
    cmd.env("STALLSCOPE_STACK_PERIOD", stack_period.to_string())
        .env("STALLSCOPE_STACK_BYTES", stack_bytes.to_string())
        .env(
            "STALLSCOPE_UNWINDER",
            if args.unwinder == Unwinder::Libunwind {
                "libunwind"
            } else {
                "libgcc"
            },
        );

    // Like a shell waiting for a foreground job: keyboard signals reach the child through the
    // terminal's process group, so ignore them here; forward termination requests sent to us.
    // SAFETY: installing handlers before the child exists; the handler only calls kill.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        for sig in [libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2] {
            libc::signal(sig, forward_signal as *const () as libc::sighandler_t);
        }
    }
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("stallscope: cannot run {}: {e}", args.command[0]);
            return Ok(if e.kind() == std::io::ErrorKind::PermissionDenied {
                126
            } else {
                127
            });
        }
    };
    CHILD_PID.store(child.id() as i32, Ordering::Relaxed);
    let status = child.wait().context("waiting for the profiled program")?;
    let wall = started.elapsed();
    CHILD_PID.store(0, Ordering::Relaxed);

    let files = session.profiles();
    let root_pid = child.id();
    let root_file = files
        .iter()
        .rev()
        .find(|(pid, _)| *pid == root_pid)
        .map(|(_, p)| p.clone());
    if let Some(path) = &root_file
        && let Err(e) = append_supervisor(path, &status, wall.as_nanos() as u64)
    {
        eprintln!(
            "stallscope: could not record the exit status in {}: {e:#}",
            path.display()
        );
    }
    if !args.quiet {
        print_summary(root_file.as_deref(), &files, root_pid, &status);
    }
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    })
}

/// Parses a duration such as `250ms`, `2s`, `1.5s` or `1m` into milliseconds.
fn parse_duration_ms(text: &str) -> std::result::Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text} (try 500ms or 2s)"))?;
    let scale = match unit {
        "ms" => 1.0,
        "s" | "" => 1000.0,
        "m" | "min" => 60_000.0,
        _ => return Err(format!("unknown unit in {text}: use ms, s or m")),
    };
    let ms = value * scale;
    if !(1.0..=86_400_000.0).contains(&ms) {
        return Err(format!("{text} is out of range (1ms to 24h)"));
    }
    Ok(ms.round() as u64)
}

/// A temporary directory holding the index the interposers append their profile paths to.
struct Session {
    dir: PathBuf,
    index: PathBuf,
}

impl Session {
    fn create() -> Result<Session> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("stallscope-run-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let index = dir.join("index");
        std::fs::File::create(&index).with_context(|| format!("creating {}", index.display()))?;
        Ok(Session { dir, index })
    }

    /// (pid, path) of every profile written, in order, keeping only files that still exist.
    fn profiles(&self) -> Vec<(u32, PathBuf)> {
        let text = std::fs::read_to_string(&self.index).unwrap_or_default();
        let mut out: Vec<(u32, PathBuf)> = Vec::new();
        for line in text.lines() {
            let mut parts = line.splitn(3, ' ');
            let (Some(pid), Some(_ppid), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(pid), path) = (pid.parse::<u32>(), PathBuf::from(path)) else {
                continue;
            };
            if path.exists() && !out.iter().any(|(_, p)| *p == path) {
                out.push((pid, path));
            }
        }
        out
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Finds the program the way execvp would.
fn resolve_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.exists().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether the dynamic linker will honour LD_PRELOAD for this program (following `#!`).
fn check_preloadable(program: &Path, depth: u32) -> std::result::Result<(), String> {
    let meta = std::fs::metadata(program).map_err(|e| e.to_string())?;
    let mode = meta.permissions().mode();
    if mode & 0o6000 != 0 {
        return Err(
            "it is setuid or setgid, and the dynamic linker ignores LD_PRELOAD for such programs"
                .into(),
        );
    }
    let mut head = vec![0u8; 4096];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(program).map_err(|e| e.to_string())?;
        f.read(&mut head).map_err(|e| e.to_string())?
    };
    head.truncate(n);
    if head.starts_with(b"#!") && depth < 4 {
        let line = head[2..].split(|&b| b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        if let Some(interp) = text.split_whitespace().next() {
            return check_preloadable(Path::new(interp), depth + 1);
        }
        return Ok(());
    }
    if !head.starts_with(b"\x7fELF") {
        return Ok(()); // a script without #! runs under /bin/sh, which takes the preload
    }
    let data = std::fs::read(program).map_err(|e| e.to_string())?;
    elf_check(&data)
}

fn elf_check(data: &[u8]) -> std::result::Result<(), String> {
    use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
    let elf = ElfFile64::<object::Endianness>::parse(data).map_err(|_| {
        "it is not a 64-bit ELF program, and the interposer is built for x86-64".to_string()
    })?;
    let endian = elf.endian();
    if elf.elf_header().e_machine(endian) != object::elf::EM_X86_64 {
        return Err("it is not an x86-64 program".into());
    }
    let has_interp = elf
        .elf_program_headers()
        .iter()
        .any(|ph| ph.p_type(endian) == object::elf::PT_INTERP);
    if !has_interp {
        return Err("it is statically linked, so no library can be preloaded into it".into());
    }
    Ok(())
}

/// Appends the exit status the supervisor observed, framed like every other record.
fn append_supervisor(path: &Path, status: &std::process::ExitStatus, wall_ns: u64) -> Result<()> {
    let mut payload = Vec::with_capacity(format::SUPERVISOR_SIZE);
    payload.extend_from_slice(&status.code().unwrap_or(-1).to_le_bytes());
    payload.extend_from_slice(&status.signal().unwrap_or(0).to_le_bytes());
    payload.extend_from_slice(&u32::from(status.core_dumped()).to_le_bytes());
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.extend_from_slice(&wall_ns.to_le_bytes());
    let mut record = Vec::with_capacity(format::RECORD_HEADER_SIZE + payload.len());
    record.extend_from_slice(&format::REC_SUPERVISOR.to_le_bytes());
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = profile::record_crc(&record[..8], &payload);
    record.extend_from_slice(&crc.to_le_bytes());
    record.extend_from_slice(&0u32.to_le_bytes());
    record.extend_from_slice(&payload);
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    file.write_all(&record)?;
    Ok(())
}

fn print_summary(
    root: Option<&Path>,
    files: &[(u32, PathBuf)],
    root_pid: u32,
    status: &std::process::ExitStatus,
) {
    let style = Style::for_stderr();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", style.bold("── stallscope ──"));
    if let Some(sig) = status.signal() {
        let _ = writeln!(
            err,
            "the program was killed by signal {sig}{}",
            if status.core_dumped() {
                " (core dumped)"
            } else {
                ""
            }
        );
    }
    match root.map(|p| (p, profile::read(p))) {
        None => {
            let _ = writeln!(
                err,
                "no profile was written: the program ended before the interposer started, or could not create its file"
            );
        }
        Some((path, Err(e))) => {
            let _ = writeln!(
                err,
                "the profile {} could not be read: {e:#}",
                path.display()
            );
        }
        Some((path, Ok(p))) => {
            let s = summary::summarize(&p);
            summary_lines(&mut err, &s, path);
        }
    }
    let earlier: Vec<_> = files
        .iter()
        .filter(|(pid, p)| *pid == root_pid && Some(p.as_path()) != root)
        .collect();
    if !earlier.is_empty() {
        let names: Vec<_> = earlier
            .iter()
            .map(|(_, p)| p.display().to_string())
            .collect();
        let _ = writeln!(err, "before exec:  {}", names.join(", "));
    }
    let children: Vec<_> = files.iter().filter(|(pid, _)| *pid != root_pid).collect();
    if !children.is_empty() {
        let _ = writeln!(err, "children:     {} profiles", children.len());
        for (pid, path) in children.iter().take(10) {
            let _ = writeln!(err, "  {pid:>8}  {}", path.display());
        }
        if children.len() > 10 {
            let _ = writeln!(err, "  ... and {} more", children.len() - 10);
        }
    }
}

fn summary_lines(err: &mut impl Write, s: &Summary, path: &Path) {
    let _ = writeln!(
        err,
        "wall time:    {}   threads: {}",
        fmt_ns(s.wall_ns as f64),
        fmt_count(s.thread_count())
    );
    let _ = writeln!(
        err,
        "allocator:    {} calls, {} of thread time inside",
        fmt_count(s.alloc_calls()),
        fmt_pct(s.alloc_share())
    );
    match s.locks.iter().find(|l| l.contended > 0) {
        Some(l) => {
            let _ = writeln!(
                err,
                "top lock:     {} {:#x}: {} of {} acquisitions contended, {} waiting",
                l.kind,
                l.address,
                fmt_count(l.contended),
                fmt_count(l.acquisitions),
                fmt_ns(l.wait_ns as f64)
            );
        }
        None => {
            let _ = writeln!(err, "locks:        no contended pthread lock");
        }
    }
    if !s.complete && s.signal.is_none() && !s.ended_by_exec {
        let why = match s.exit_code {
            Some(code) => format!(
                "the program exited with status {code}, but its last data was not written; data up to its last flush"
            ),
            None => "the program did not exit cleanly; data up to its last flush".to_string(),
        };
        let _ = writeln!(err, "partial:      {why}");
    }
    let _ = writeln!(
        err,
        "profile:      {}   (stallscope report {})",
        path.display(),
        path.display()
    );
}
