//! `stallscope run`: launch a program with the interposer preloaded, pass its I/O, signals and
//! exit status through unchanged, then summarise the profile it wrote.

use crate::analysis::summary;
use crate::options;
use crate::profile::{self, format, tree};
use crate::util::{Style, fmt_count, fmt_ns, fmt_pct};
use anyhow::{Context, Result};
use std::io::{BufRead, Read, Seek, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

mod launch;
mod sandbox;
mod signals;
mod spawn;

mod preloadable;
mod session;
mod summary_text;
pub(crate) use preloadable::image_refusal;
use preloadable::*;
use session::*;
use summary_text::*;

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
    /// Mean sampling period for --timing sampled: one allocator call in N is timed, and one lock
    /// acquisition in N has its hold timed [default: 256, and 16 times that for an allocator
    /// function once a thread has timed 2048 of its calls since it began or last began a phase;
    /// an N given is kept throughout]
    #[arg(long, value_name = "N")]
    pub timing_period: Option<u32>,
    /// Take the call stack of one allocation call in N on average (0: none by count); stacks are
    /// taken on timed calls, so an N below --timing-period times one call in N too, and N grows
    /// with a function's timing period where that lengthens
    #[arg(long, value_name = "N", default_value_t = options::STACK_PERIOD.default as u32)]
    pub stack_period: u32,
    /// Also take a stack once per BYTES allocated on average, so large calls are represented by
    /// size (0: none by size); --no-stacks turns both off
    #[arg(long, value_name = "BYTES", default_value_t = options::STACK_BYTES.default)]
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
    #[arg(long, value_name = "HZ", default_value_t = options::SAMPLE_HZ.default as u32,
          value_parser = clap::value_parser!(u32).range(options::SAMPLE_HZ.min as i64..=options::SAMPLE_HZ.max as i64))]
    pub sample_hz: u32,
    /// Wall-clock samples per second of threads that are not running (0: none)
    #[arg(long, value_name = "HZ", default_value_t = options::WALL_HZ.default as u32,
          value_parser = clap::value_parser!(u32).range(options::WALL_HZ.min as i64..=options::WALL_HZ.max as i64))]
    pub wall_hz: u32,
    /// No thread-state sampling at all (the same as --sample-hz 0 --wall-hz 0)
    #[arg(long)]
    pub no_sampling: bool,
    /// Load the interposer with recording off: nothing is recorded or written until `stallscope
    /// attach PID` opens a window (needs no ptrace; the processes it starts are paused too)
    #[arg(long)]
    pub paused: bool,
    /// With --push: record the program in consecutive windows of DURATION (e.g. 10s, 500ms), each
    /// pushed as it closes, instead of one profile file [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_ms, requires = "push")]
    pub every: Option<u64>,
    #[command(flatten)]
    pub push: crate::export::push::PushArgs,
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

/// The STALLSCOPE_ variables this run needs besides the profile paths: the session's, and each
/// option that differs from the interposer's default (preload/ss_options.def), so that the
/// program's environment carries as few of stallscope's variables as possible.
fn settings(args: &RunArgs, session: &Session) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (options::SUPERVISOR.env, std::process::id().to_string()),
        (options::INDEX.env, session.index.display().to_string()),
    ];
    if args.no_children {
        out.push((options::NO_CHILDREN.env, "1".into()));
    }
    if args.paused || args.push.push.is_some() {
        out.push((options::PAUSED.env, "1".into()));
    }
    if args.push.push.is_some() {
        out.push((options::CONTINUOUS.env, "1".into()));
    }
    // Stacks are taken on timed calls: a stack period denser than the timing period (`--stack-period
    // 1`: every call's stack) times as densely.
    let mut timing_period = options::TIMING_PERIOD.clamp(
        args.timing_period
            .map_or(options::TIMING_PERIOD.default, u64::from),
    );
    if !args.no_stacks && args.stack_period > 0 {
        timing_period = timing_period.min(u64::from(args.stack_period).max(1));
    }
    if args.timing == Timing::Exact {
        out.push((options::TIMING.env, "exact".into()));
    } else if args.timing_period.is_some() || timing_period != options::TIMING_PERIOD.default {
        // A period given, even the default one, is kept throughout: the interposer lengthens only
        // a period it was not given.
        out.push((options::TIMING_PERIOD.env, timing_period.to_string()));
    }
    if let Some(ms) = args.snapshot_every {
        out.push((options::SNAPSHOT_MS.env, ms.max(1).to_string()));
    }
    if args.snapshot_on_signal {
        out.push((options::SNAPSHOT_SIGNAL.env, "1".into()));
    }
    let (sample_hz, wall_hz) = if args.no_sampling {
        (0, 0)
    } else {
        (args.sample_hz, args.wall_hz)
    };
    if u64::from(sample_hz) != options::SAMPLE_HZ.default {
        out.push((options::SAMPLE_HZ.env, sample_hz.to_string()));
    }
    if u64::from(wall_hz) != options::WALL_HZ.default {
        out.push((options::WALL_HZ.env, wall_hz.to_string()));
    }
    let (stack_period, stack_bytes) = if args.no_stacks {
        (0, 0)
    } else {
        (args.stack_period, args.stack_bytes)
    };
    if u64::from(stack_period) != options::STACK_PERIOD.default {
        out.push((options::STACK_PERIOD.env, stack_period.to_string()));
    }
    if stack_bytes != options::STACK_BYTES.default {
        out.push((options::STACK_BYTES.env, stack_bytes.to_string()));
    }
    if args.unwinder == Unwinder::Libunwind {
        out.push((options::UNWINDER.env, "libunwind".into()));
    }
    out
}

pub fn main(args: RunArgs) -> Result<i32> {
    let program = match resolve_program(&args.command[0]) {
        Some(p) => p,
        None => {
            eprintln!("stallscope: {}: command not found", args.command[0]);
            return Ok(127);
        }
    };
    match check_preloadable(&program, 0) {
        Err(reason) => {
            eprintln!("stallscope: cannot profile {}: {reason}", program.display());
            eprintln!(
                "stallscope: the program was not run (a profile needs LD_PRELOAD, which it would ignore)"
            );
            return Ok(2);
        }
        Ok(Preload::Foreign(why)) => {
            let note = format!("{} runs unprofiled: {why}", program.display());
            return run_unprofiled(&args.command, &note);
        }
        Ok(Preload::Takes) => {}
    }
    if let Some(option) = loader_runs_no_program(&program, &args.command[1..]) {
        let note = format!(
            "{} {option} runs no program (the loader only reports): it runs as without stallscope, unprofiled",
            program.display()
        );
        return run_unprofiled(&args.command, &note);
    }
    if args.paused && args.output.is_some() {
        eprintln!(
            "stallscope: --paused writes no profile by itself: give -o to `stallscope attach` instead"
        );
        return Ok(2);
    }
    let target = match crate::export::push::Target::from_args(&args.push) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("stallscope: {e}");
            return Ok(2);
        }
    };
    if target.is_some() && (args.paused || args.output.is_some()) {
        eprintln!(
            "stallscope: --push records the program in windows pushed to the server: give no --paused or -o"
        );
        return Ok(2);
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let root = match &args.output {
        Some(o) => launch::RootPath::Given(cwd.join(o)),
        None => launch::RootPath::Default {
            dir: cwd.clone(),
            name: launch::profile_name(std::ffi::OsStr::new(&args.command[0])),
        },
    };
    if let launch::RootPath::Given(out) = &root {
        for taken in [out.clone(), tree::children_dir(out)] {
            if std::fs::symlink_metadata(&taken).is_ok() {
                eprintln!(
                    "stallscope: {} exists; refusing to overwrite it",
                    taken.display()
                );
                return Ok(2);
            }
        }
    }
    let profile_dir = match &root {
        launch::RootPath::Given(out) => out.parent().unwrap_or(Path::new("/")).to_path_buf(),
        launch::RootPath::Default { dir, .. } => dir.clone(),
    };
    if let Err(e) = check_writable(&profile_dir) {
        eprintln!(
            "stallscope: cannot write the profile in {}: {e}",
            profile_dir.display()
        );
        eprintln!(
            "stallscope: the program was not run; write the profile elsewhere with -o FILE (e.g. -o /tmp/{}.prof)",
            launch::profile_name(std::ffi::OsStr::new(&args.command[0]))
        );
        return Ok(2);
    }
    let library = crate::preload::library_path()?;
    if let Some(why) = sandbox::refusal(&library) {
        let note = format!("{} runs unprofiled: {why}", program.display());
        return run_unprofiled(&args.command, &note);
    }
    let session = Session::create()?;
    let mut plan = Box::new(launch::Launch::new(
        &library,
        &settings(&args, &session),
        &root,
        !args.no_children,
    ));

    let argv = match args
        .command
        .iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()))
        .collect::<std::result::Result<Vec<_>, _>>()
    {
        Ok(argv) => argv,
        Err(_) => {
            eprintln!(
                "stallscope: cannot run {}: an argument holds a NUL byte",
                args.command[0]
            );
            return Ok(127);
        }
    };
    signals::supervise();
    let started = Instant::now();
    // Runs in the child, which shares our memory until its exec (spawn.rs): async-signal-safe
    // work on the plan made above.
    let mut prepare = || plan.in_child();
    let root_pid = match spawn::spawn(&argv, &mut prepare) {
        Ok(pid) => pid as u32,
        Err(e) => {
            eprintln!("stallscope: cannot run {}: {e}", args.command[0]);
            return Ok(if e.kind() == std::io::ErrorKind::PermissionDenied {
                126
            } else {
                127
            });
        }
    };
    if args.paused && !args.quiet && args.push.push.is_none() {
        eprintln!(
            "stallscope: {root_pid} runs paused, recording nothing: `stallscope attach {root_pid}` records a window of it"
        );
    }
    signals::child_started(root_pid as i32);
    // The windows are opened, read and pushed by a thread of this process; the program's end
    // ends the last window, which is pushed within the push timeout.
    let windows = target.map(|target| {
        let every = std::time::Duration::from_millis(
            args.every
                .unwrap_or(crate::attach::windows::DEFAULT_EVERY_MS)
                .max(100),
        );
        let describe = target.describe();
        let quiet = args.quiet;
        let handle = std::thread::Builder::new()
            .name("stallscope-windows".into())
            .spawn(move || crate::attach::tree::record(root_pid, every, target, quiet));
        (handle, describe)
    });
    signals::wait_for_end(root_pid as i32);
    if let Some((handle, describe)) = windows {
        let outcome = match handle {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Err("the windows' thread failed".into())),
            Err(e) => Err(format!("cannot start the windows' thread: {e}")),
        };
        match outcome {
            Ok(o) if !args.quiet || o.lost > 0 => {
                eprintln!("stallscope: {}", o.describe(&describe))
            }
            Ok(_) => {}
            Err(e) => eprintln!("stallscope: no windows pushed: {e}"),
        }
    }
    let status = std::process::ExitStatus::from_raw(
        spawn::wait_for_exit(root_pid as i32).context("waiting for the profiled program")?,
    );
    let wall = started.elapsed();

    let (root_path, children_dir) = plan.chosen_paths(root_pid);
    session.unpack();
    let mut files = session.profiles();
    let mut root_file = files
        .iter()
        .rev()
        .find(|(pid, p)| *pid == root_pid && *p == root_path)
        .or_else(|| files.iter().rev().find(|(pid, _)| *pid == root_pid))
        .map(|(_, p)| p.clone());
    // The launched process's last image was not profiled (it emptied its environment, `env -i
    // prog`; or it runs a static program, or one whose loader is not glibc's): its last profiled
    // image goes where the user asked.
    if let Some(last) = root_file.clone()
        && last != root_path
        && std::fs::symlink_metadata(&root_path).is_err()
        && std::fs::hard_link(&last, &root_path).is_ok()
    {
        let _ = std::fs::remove_file(&last);
        for f in files.iter_mut().filter(|(_, p)| *p == last) {
            f.1 = root_path.clone();
        }
        root_file = Some(root_path.clone());
    }
    let run_dir = children_dir.unwrap_or_else(|| tree::children_dir(&root_path));
    let others = gather_run(&files, root_file.as_deref(), &run_dir);
    if let Some(path) = &root_file
        && let Err(e) = append_supervisor(path, &status, wall.as_nanos() as u64)
    {
        eprintln!(
            "stallscope: could not record the exit status in {}: {e:#}",
            path.display()
        );
    }
    if !args.quiet && !args.paused && args.push.push.is_none() {
        print_summary(root_file.as_deref(), &root_path, &run_dir, others, &status);
        let notes = session.notes();
        for note in notes.iter().take(5) {
            eprintln!("note: {note}");
        }
        if notes.len() > 5 {
            eprintln!("note: and {} more programs ran unprofiled", notes.len() - 5);
        }
        // The interposer is the ITT collector only where none is named (docs/STATES.md, "TBB
        // through ITT").
        if let Some(own) = std::env::var_os("INTEL_LIBITTNOTIFY64").filter(|v| !v.is_empty()) {
            eprintln!(
                "note: INTEL_LIBITTNOTIFY64 names {}: that ITT collector was kept, so TBB's synchronization objects were not seen through ITT",
                Path::new(&own).display()
            );
        }
    }
    drop(session);
    if let Some(sig) = status.signal() {
        signals::die_like(sig);
    }
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    })
}

/// The program's name as profile names show it (`launch::profile_name`).
pub fn profile_name_of(argv0: &std::ffi::OsStr) -> String {
    launch::profile_name(argv0)
}

/// Whether a profile can be created in `dir` (the search and write permissions, a read-only
/// file system), without creating anything there.
fn check_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// After the run: every profile besides the root's ends up in the run's directory (earlier images
/// of the launched process, written next to it as ROOT.exec-N, are moved there); the directory is
/// removed if no process wrote there. Returns how many profiles it holds.
fn gather_run(files: &[(u32, PathBuf)], root: Option<&Path>, run_dir: &Path) -> usize {
    for (_, path) in files {
        if Some(path.as_path()) == root || path.starts_with(run_dir) {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        let target = run_dir.join(name);
        let moved = std::fs::create_dir_all(run_dir).is_ok()
            && !target.exists()
            && std::fs::rename(path, &target).is_ok();
        if !moved {
            eprintln!(
                "stallscope: could not move {} into {}",
                path.display(),
                run_dir.display()
            );
        }
    }
    let count = std::fs::read_dir(run_dir).map_or(0, |d| d.flatten().count());
    if count == 0 {
        let _ = std::fs::remove_dir(run_dir);
    }
    count
}

/// Parses a duration such as `250ms`, `2s`, `1.5s` or `1m` into milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> std::result::Result<u64, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader's reporting options are found before the program operand, never after it.
    #[test]
    fn loader_options_that_run_no_program() {
        let loader = Path::new("/lib64/ld-linux-x86-64.so.2");
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases: [(&[&str], Option<&str>); 7] = [
            (&["--list", "/bin/true"], Some("--list")),
            (
                &["--library-path", "/x", "--list", "/bin/true"],
                Some("--list"),
            ),
            (
                &["--inhibit-cache", "--verify", "/bin/true"],
                Some("--verify"),
            ),
            (&["--argv0", "--list", "/bin/true"], None),
            (&["/bin/true", "--list"], None),
            (&["--library-path", "/x", "/bin/true"], None),
            (&["--version"], Some("--version")),
        ];
        for (args, expected) in cases {
            assert_eq!(
                loader_runs_no_program(loader, &words(args)),
                expected,
                "{args:?}"
            );
        }
        assert_eq!(
            loader_runs_no_program(Path::new("/usr/bin/env"), &words(&["--list"])),
            None
        );
    }

    /// A child that only exited leaves its records' checksums to the supervisor ("LEN+"): the
    /// file gets them as the interposer computes them; an entry without the mark is written as
    /// it came.
    #[test]
    fn unpack_seals_the_records_of_an_unsealed_entry() {
        let session = Session::create().unwrap();
        let out = session.dir.join("out");
        std::fs::create_dir(&out).unwrap();
        // A file header (24 bytes) and one record of 5 payload bytes (padded to 8), checksums 0.
        let mut body = b"STALLSCP".to_vec();
        body.resize(24, 0);
        body.extend_from_slice(&[3, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(b"hello\0\0\0");
        let mut pack = Vec::new();
        for (pid, mark) in [(7, "+"), (8, "")] {
            let path = out.join(format!("stallscope-c-{pid}.prof"));
            pack.extend(format!("{pid} 1 {}{mark} {}\n", body.len(), path.display()).bytes());
            pack.extend_from_slice(&body);
        }
        std::fs::write(&session.pack, &pack).unwrap();
        session.unpack();
        let sealed = std::fs::read(out.join("stallscope-c-7.prof")).unwrap();
        let mut expected = body.clone();
        crate::profile::fix_checksums(&mut expected);
        assert_ne!(expected, body);
        assert_eq!(sealed, expected);
        let record_crc = u32::from_le_bytes(sealed[32..36].try_into().unwrap());
        assert_eq!(
            record_crc,
            crate::profile::record_crc(&sealed[24..32], b"hello")
        );
        assert_eq!(
            std::fs::read(out.join("stallscope-c-8.prof")).unwrap(),
            body
        );
    }

    /// The pack's entries become files (the next free name when one is taken), each noted in the
    /// index; an entry cut short and what follows it are dropped; entries written after the
    /// first read are unpacked by the next.
    #[test]
    fn unpack_writes_each_entry_once() {
        let session = Session::create().unwrap();
        let out = session.dir.join("out");
        std::fs::create_dir(&out).unwrap();
        let taken = out.join("stallscope-a-7.prof");
        std::fs::write(&taken, b"theirs").unwrap();
        let entry = |pid: u32, name: &str, body: &[u8]| {
            let mut e =
                format!("{pid} 1 {} {}\n", body.len(), out.join(name).display()).into_bytes();
            e.extend_from_slice(body);
            e
        };
        let mut pack = entry(7, "stallscope-a-7.prof", b"STALLSCP seven\nbytes");
        pack.extend(entry(8, "stallscope-b-8.prof", b"STALLSCP eight"));
        std::fs::write(&session.pack, &pack).unwrap();
        session.unpack();
        assert_eq!(std::fs::read(&taken).unwrap(), b"theirs");
        let moved = out.join("stallscope-a-7.1.prof");
        assert_eq!(std::fs::read(&moved).unwrap(), b"STALLSCP seven\nbytes");
        assert_eq!(
            std::fs::read(out.join("stallscope-b-8.prof")).unwrap(),
            b"STALLSCP eight"
        );
        let index = std::fs::read_to_string(&session.index).unwrap();
        assert_eq!(
            index,
            format!(
                "7 1 {}\n8 1 {}\n",
                moved.display(),
                out.join("stallscope-b-8.prof").display()
            )
        );
        // Renamed at the first read: a child ending later makes its own file.
        assert!(!session.pack.exists());
        // A late entry of a child that opened the pack before the rename, then one cut short.
        let read = session.pack.with_extension("read");
        let mut late = std::fs::OpenOptions::new()
            .append(true)
            .open(&read)
            .unwrap();
        late.write_all(&entry(9, "stallscope-c-9.prof", b"STALLSCP nine"))
            .unwrap();
        late.write_all(b"10 1 50 /nowhere\nshort").unwrap();
        late.write_all(&entry(
            11,
            "stallscope-d-11.prof",
            b"STALLSCP after a short one",
        ))
        .unwrap();
        session.unpack();
        assert_eq!(
            std::fs::read(out.join("stallscope-c-9.prof")).unwrap(),
            b"STALLSCP nine"
        );
        // An entry cut short (its length claims more than follows) ends the reading.
        assert!(!out.join("stallscope-d-11.prof").exists());
        assert_eq!(session.profiles().len(), 3);
    }

    /// A reader that counts the bytes it is asked for.
    struct Counted<R> {
        inner: R,
        read: std::rc::Rc<std::cell::Cell<u64>>,
    }

    impl<R: std::io::Read> std::io::Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read.set(self.read.get() + n as u64);
            Ok(n)
        }
    }

    impl<R: std::io::Seek> std::io::Seek for Counted<R> {
        fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(to)
        }
    }

    /// Whether a program takes the preload is told by its headers: a program of a gigabyte is
    /// checked by reading a few kilobytes of it (reading the whole file would take 45 ms for
    /// cargo's 42 MB, 90 ms for node's 99 MB).
    #[test]
    fn a_program_is_checked_by_its_headers_alone() {
        let session = Session::create().unwrap(); // a directory removed at the end
        let big = session.dir.join("big");
        std::fs::copy("/bin/true", &big).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&big)
            .unwrap()
            .set_len(1 << 30) // sparse: a gigabyte of nothing after the program
            .unwrap();
        let read = std::rc::Rc::new(std::cell::Cell::new(0));
        let file = Counted {
            inner: std::fs::File::open(&big).unwrap(),
            read: read.clone(),
        };
        let whole_read = std::cell::Cell::new(false);
        let got = elf_check(&object::ReadCache::new(file), false, || {
            whole_read.set(true);
            None
        });
        assert_eq!(got, Ok(Preload::Takes));
        assert!(!whole_read.get());
        assert!(read.get() < 64 * 1024, "read {} bytes", read.get());
        assert_eq!(check_preloadable(&big, 0), Ok(Preload::Takes));
    }

    /// The headers refuse what the preload cannot enter: a program without a loader (static), one
    /// of 32 bits, one for another machine; a loader that is not glibc's runs unprofiled.
    #[test]
    fn the_headers_tell_a_static_a_32_bit_and_a_foreign_program() {
        use object::elf::{FileHeader64, ProgramHeader64};
        use object::read::elf::{FileHeader, ProgramHeader};
        let program = std::fs::read("/bin/true").unwrap();
        let check = |data: &[u8]| elf_check(data, false, || None);
        assert_eq!(check(&program), Ok(Preload::Takes));
        let header = FileHeader64::<object::Endianness>::parse(&program[..]).unwrap();
        let endian = header.endian().unwrap();
        let phoff = header.e_phoff(endian) as usize;
        let phsize = std::mem::size_of::<ProgramHeader64<object::Endianness>>();
        let interp = header
            .program_headers(endian, &program[..])
            .unwrap()
            .iter()
            .position(|ph| ph.p_type(endian) == object::elf::PT_INTERP)
            .expect("/bin/true has a loader");
        let at = phoff + interp * phsize;

        let mut static_ = program.clone();
        static_[at..at + 4].copy_from_slice(&object::elf::PT_NULL.0.to_le_bytes());
        assert!(check(&static_).unwrap_err().contains("statically linked"));

        let mut bits32 = program.clone();
        bits32[4] = object::elf::ELFCLASS32.0;
        assert!(check(&bits32).unwrap_err().contains("not a 64-bit ELF"));

        let mut arm = program.clone();
        arm[18..20].copy_from_slice(&object::elf::EM_AARCH64.0.to_le_bytes());
        assert!(check(&arm).unwrap_err().contains("not an x86-64 program"));

        let mut musl = program.clone();
        let ph = &header.program_headers(endian, &program[..]).unwrap()[interp];
        let (offset, size) = (ph.p_offset(endian) as usize, ph.p_filesz(endian) as usize);
        let name = b"/lib/ld-musl-x86_64.so.1\0";
        assert!(name.len() <= size);
        musl[offset..offset + name.len()].copy_from_slice(name);
        match check(&musl) {
            Ok(Preload::Foreign(why)) => assert!(why.contains("ld-musl"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A loader's glibc is new enough when it defines GLIBC_2.34: the system's own loader is; a
    /// made-up old one is refused with its release, or without one.
    #[test]
    fn a_glibc_older_than_the_interposer_needs_is_seen_in_its_loader() {
        let system = std::fs::read(SYSTEM_LOADERS[0]).unwrap();
        let minor = glibc_minor_of_loader(&system).expect("the system loader has a version");
        assert!(
            minor >= OLDEST_GLIBC_MINOR,
            "stallscope runs on glibc 2.{minor}"
        );
        assert_eq!(old_glibc(&system), None);
        let old = b"\0GLIBC_2.33\0ld.so (GLIBC 2.33) stable release version 2.33.\n";
        assert_eq!(glibc_minor_of_loader(old), Some(33));
        assert!(old_glibc(old).unwrap().contains("glibc 2.33,"));
        assert!(
            old_glibc(b"\0GLIBC_2.4\0")
                .unwrap()
                .contains("older than 2.34")
        );
        assert_eq!(glibc_minor_of_loader(b"no version here"), None);
    }
}
