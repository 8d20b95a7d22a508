//! Continuous windows: `attach --push URL [--every D] PID` and `run --push URL [--every D]`
//! record a process in consecutive attach windows (each a whole profile, as one `attach` makes)
//! and push each as it closes. Everything runs in stallscope's process, never on the program's
//! threads: this loop opens and closes the windows (the program's flusher thread writes them, as
//! for any attach), and the pushing thread of [`queue`] reads each window's file, turns it into
//! the server's profiles and pushes them. A window's file is removed once read; at most
//! [`queue::CAPACITY`] wait, and a window that finds the queue full is removed unread and counted
//! lost. So however long it runs, stallscope's memory and disk stay those of a few windows, and
//! a server that is down or slow loses windows without holding up the program. Between two
//! windows the program runs unrecorded for the time its flusher takes to see the next request
//! (it looks every 100 ms).
use super::{INTERRUPTED, connect, on_interrupt, read_line, send_request, wait_window};
use crate::export::push::queue::{Job, Outcome, Pusher};
use crate::export::push::{self, Target};
use crate::model::Model;
use anyhow::Result;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The window's length when --every is not given.
pub const DEFAULT_EVERY_MS: u64 = 10_000;

/// How often a window's wait looks whether it is to stop early.
const HALT_SLICE: Duration = Duration::from_millis(200);

/// How long a process that ended a window by itself (it changed its user: its listener left)
/// may take to listen again before `attach` gives up on it.
const RELISTEN: Duration = Duration::from_secs(10);

/// `attach --push`: windows until the process ends, --duration passes or Ctrl-C.
pub fn attach(
    pid: u32,
    stream: UnixStream,
    target: Target,
    args: &super::AttachArgs,
) -> Result<i32> {
    let every = Duration::from_millis(args.every.unwrap_or(DEFAULT_EVERY_MS).max(100));
    let until = args
        .duration
        .map(|d| Instant::now() + Duration::from_secs_f64(d));
    let describe = target.describe();
    if !args.quiet {
        eprintln!(
            "stallscope: recording {pid} in windows of {:.1} s, each pushed to {describe}{}",
            every.as_secs_f64(),
            match args.duration {
                Some(d) => format!(" for {d} s"),
                None => "; Ctrl-C detaches".to_string(),
            }
        );
    }
    // SAFETY: the handler only stores to an atomic.
    let (old_int, old_term) = unsafe {
        (
            libc::signal(
                libc::SIGINT,
                on_interrupt as *const () as libc::sighandler_t,
            ),
            libc::signal(
                libc::SIGTERM,
                on_interrupt as *const () as libc::sighandler_t,
            ),
        )
    };
    let outcome = record(
        pid,
        Some(stream),
        every,
        until,
        target,
        false,
        args.quiet,
        None,
    );
    // SAFETY: restoring the dispositions found.
    unsafe {
        libc::signal(libc::SIGINT, old_int);
        libc::signal(libc::SIGTERM, old_term);
    }
    match outcome {
        Ok(o) => {
            if !args.quiet {
                eprintln!("stallscope: {}", o.describe(&describe));
            }
            Ok(0)
        }
        Err(e) => {
            eprintln!("stallscope: {e}");
            Ok(2)
        }
    }
}

/// Records windows of `pid` until it ends (or Ctrl-C, or `until`, or `halt` is set: the window
/// open then closes at once), pushing each. `first`: a connection to its listener already made.
/// `patient`: wait for the listener as long as the process lives (`run`, whose program may take
/// a while to load the interposer, or exec a program that listens again); else give up after
/// [`RELISTEN`].
#[allow(clippy::too_many_arguments)]
pub fn record(
    pid: u32,
    mut first: Option<UnixStream>,
    every: Duration,
    until: Option<Instant>,
    target: Target,
    patient: bool,
    quiet: bool,
    halt: Option<&AtomicBool>,
) -> std::result::Result<Outcome, String> {
    let dir =
        private_dir(pid).map_err(|e| format!("cannot create a directory for the windows: {e}"))?;
    let mut pusher = Pusher::start(target, quiet)
        .map_err(|e| format!("cannot start the pushing thread: {e}"))?;
    let stop = || {
        INTERRUPTED.load(Ordering::SeqCst)
            || until.is_some_and(|u| Instant::now() >= u)
            || halt.is_some_and(|h| h.load(Ordering::SeqCst))
    };
    let mut n = 0u64;
    let mut waiting_since: Option<Instant> = None;
    let mut refusal: Option<String> = None;
    while !stop() {
        let mut stream = match first.take().map_or_else(|| connect(pid), Ok) {
            Ok(s) => s,
            Err(_) => {
                if !alive(pid) {
                    break;
                }
                let since = *waiting_since.get_or_insert_with(Instant::now);
                if !patient && since.elapsed() > RELISTEN {
                    refusal = Some(format!("{pid} stopped listening for windows"));
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let path = dir.join(format!("window-{n}.prof"));
        n += 1;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        if send_request(&stream, &file, &path).is_err() {
            drop(file);
            let _ = std::fs::remove_file(&path);
            continue;
        }
        drop(file);
        match read_line(&mut stream, Duration::from_secs(10)) {
            Ok(line) if line.starts_with("OK ") => waiting_since = None,
            Ok(line) => {
                let _ = std::fs::remove_file(&path);
                let why = line.strip_prefix("ERR ").unwrap_or(&line).to_string();
                refusal = Some(format!("{pid} refused the window: {why}"));
                break;
            }
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                continue;
            }
        }
        let opened = unix_ns();
        let started = Instant::now();
        let length = until.map_or(every, |u| {
            every.min(u.saturating_duration_since(Instant::now()))
        });
        // In slices, so that `halt` closes the window within one.
        let ended = loop {
            let left = length.saturating_sub(started.elapsed());
            if left.is_zero() || stop() {
                break false;
            }
            if wait_window(&mut stream, Some(left.min(HALT_SLICE))) {
                break true;
            }
        };
        if !ended {
            // Close it and wait for its last batch to be written.
            let _ = stream.write_all(b"S");
            let _ = read_line(&mut stream, Duration::from_secs(15));
        }
        drop(stream);
        let time = Some((opened, started.elapsed().as_nanos() as u64));
        let file = path.clone();
        let job: Job = Box::new(move |target: &Target| {
            let model = Model::read(&file);
            let _ = std::fs::remove_file(&file);
            model.ok().map(|m| push::window(&m, target, time))
        });
        if let Err(job) = pusher.offer(job) {
            drop(job);
            let _ = std::fs::remove_file(&path);
        }
        if ended && !alive(pid) {
            break;
        }
    }
    let outcome = pusher.finish();
    let _ = std::fs::remove_dir_all(&dir);
    match refusal {
        Some(why) if outcome.pushed == 0 && outcome.lost == 0 => Err(why),
        Some(why) => {
            if !quiet {
                eprintln!("stallscope: {why}");
            }
            Ok(outcome)
        }
        None => Ok(outcome),
    }
}

/// Whether the process still runs (a zombie has ended).
fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X" | "x") | None)
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// A directory only this user can read, for the windows' files until they are pushed.
fn private_dir(pid: u32) -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for k in 0..1000u32 {
        let dir = base.join(format!(
            "stallscope-windows-{pid}-{}-{k}",
            std::process::id()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{} holds too many of stallscope's directories",
        Path::new(&base).display()
    )))
}
