//! The one helper module of the integration tests (`mod common;` in each): the repository's
//! files, temporary directories, compiling C/C++ test programs, running them with and without
//! `stallscope run`, reading the JSON report and bench's export, golden files, and what to do
//! when a tool is missing: a clear failure in CI (the `CI` variable is set, as by .ci/run), a
//! clear skip elsewhere, the same way in every test.
#![allow(dead_code)] // each test binary uses a different subset

use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The stallscope executable under test.
pub fn stallscope() -> &'static str {
    env!("CARGO_BIN_EXE_stallscope")
}

/// A directory removed when dropped (kept when `STALLSCOPE_KEEP_TEST_DIRS` is set, for debugging).
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "stallscope-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

/// A `TempDir` is its path wherever a path is expected.
impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("STALLSCOPE_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// tests/rust_programs built with cargo `profile` (`release`; `nodebug`: std's symbols only, as
/// `cargo build --release` ships a program), all its programs or only `bin`, into the test
/// build's own target directory (rayon and parking_lot come from crates.io): the directory that
/// holds them.
pub fn rust_programs(profile: &str, bin: Option<&str>) -> PathBuf {
    let target = repo().join("target").join("rust_programs");
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.args(["build", "--quiet", "--profile", profile]);
    if let Some(bin) = bin {
        c.args(["--bin", bin]);
    }
    let out = c
        .arg("--manifest-path")
        .arg(repo_file("tests/rust_programs/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("running cargo");
    assert!(
        out.status.success(),
        "building tests/rust_programs ({profile}) failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join(profile)
}

/// The repository's root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file of the repository, by its path from the root (`tests/golden/work.c`).
pub fn repo_file(path: &str) -> PathBuf {
    repo().join(path)
}

/// A test program's source: `name` in the directory `tests/<kind>/` (`programs`,
/// `stack_programs`, `state_programs`, `findings_programs`, `bench_programs`, `golden`).
pub fn test_source(kind: &str, name: &str) -> PathBuf {
    let path = repo().join("tests").join(kind).join(name);
    assert!(path.is_file(), "no test program {}", path.display());
    path
}

/// The absolute path of a test program's source in tests/programs/.
pub fn program_source(name: &str) -> PathBuf {
    test_source("programs", name)
}

/// `-I` for the public header (include/stallscope.h).
pub fn include_flag() -> String {
    format!("-I{}", repo().join("include").display())
}

/// The missing-tool policy of every test (in CI a failure, elsewhere a skip), from the crate.
#[allow(unused_imports)] // each test binary uses a different subset
pub use stallscope::util::testing::{have, in_ci};

/// Whether `tool` runs (`tool PROBE...`), under the policy of [`have`]; `package` is the Debian
/// package that provides it.
pub fn have_tool(tool: &str, probe: &[&str], package: &str) -> bool {
    let runs = Command::new(tool)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    have(
        &format!("`{tool}`"),
        runs,
        &format!("apt-get install {package}"),
    )
}

/// Whether one of `paths` exists (a library), under the policy of [`have`].
pub fn have_file(paths: &[&str], package: &str) -> bool {
    let present = paths.iter().any(|p| Path::new(p).exists());
    have(paths[0], present, &format!("apt-get install {package}"))
}

/// The C++ compiler, under the policy of [`have`] (the C compiler builds stallscope itself).
pub fn have_cxx() -> bool {
    have_tool("c++", &["--version"], "g++")
}

/// `go`, for `go tool pprof` (the machine's Go lives in /usr/local/go/bin), under [`have`].
pub fn go() -> Option<&'static str> {
    let found = ["/usr/local/go/bin/go", "go"]
        .into_iter()
        .find(|g| Command::new(g).arg("version").output().is_ok());
    if have(
        "`go`",
        found.is_some(),
        "Go from https://go.dev/dl/ in /usr/local/go",
    ) {
        found
    } else {
        None
    }
}

/// Compares `actual` with tests/golden/`name`, or rewrites the golden file when STALLSCOPE_BLESS
/// is set (`STALLSCOPE_BLESS=1 cargo test --release --test TEST`).
pub fn check_golden(name: &str, actual: &[u8]) {
    let path = repo_file("tests/golden").join(name);
    if std::env::var_os("STALLSCOPE_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        eprintln!("blessed {}", path.display());
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (STALLSCOPE_BLESS=1 cargo test --release writes it)",
            path.display()
        )
    });
    if expected != actual {
        let shown = path.with_extension("actual");
        let _ = std::fs::write(&shown, actual);
        panic!(
            "{} differs from the output; the output is in {} \
             (STALLSCOPE_BLESS=1 cargo test --release accepts it)",
            path.display(),
            shown.display()
        );
    }
}

/// `stallscope ARGS` run from the repository's root (so that paths print as given), asserting
/// success; its standard output.
pub fn stallscope_in_repo(args: &[&str]) -> Vec<u8> {
    let out = Command::new(stallscope())
        .args(args)
        .current_dir(repo())
        .output()
        .expect("running stallscope");
    assert!(
        out.status.success(),
        "stallscope {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Compiles tests/programs/`source` with `-O1 -pthread` (cc for .c, c++ for .cpp) into `dir`,
/// and returns the executable's path.
pub fn compile(dir: &Path, source: &str, extra: &[&str]) -> PathBuf {
    compile_file(dir, &program_source(source), extra)
}

/// Like `compile`, for a source file anywhere (its path, not a name in tests/programs).
pub fn compile_file(dir: &Path, src: &Path, extra: &[&str]) -> PathBuf {
    let source = src.file_name().unwrap().to_str().unwrap();
    let stem = Path::new(source).file_stem().unwrap().to_str().unwrap();
    let exe = dir.join(stem);
    let compiler = if source.ends_with(".cpp") {
        "c++"
    } else {
        "cc"
    };
    let out = Command::new(compiler)
        .args(["-O1", "-pthread", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg(src)
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler} (Debian package gcc/g++ needed): {e}"));
    assert!(
        out.status.success(),
        "compiling {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Compiles `src` with `compiler` and `flags` (after the source: libraries) into `dir`/`name`.
/// When it cannot be built, because the compiler or a library is missing, [`have`] decides
/// (`install` says what to install); a program that does not compile with them all there fails.
pub fn try_compile(
    compiler: &str,
    dir: &Path,
    src: &Path,
    name: &str,
    flags: &[&str],
    install: &str,
) -> Option<PathBuf> {
    let exe = dir.join(name);
    let out = Command::new(compiler)
        .arg("-O2")
        .arg("-o")
        .arg(&exe)
        .arg(src)
        .args(flags)
        .output();
    let built = out.as_ref().is_ok_and(|o| o.status.success());
    let why = match &out {
        Err(e) => format!("{compiler}: {e}"),
        Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
    };
    have(
        &format!("what {} needs ({why})", src.display()),
        built,
        install,
    )
    .then_some(exe)
}

/// Runs `stallscope run RUN_ARGS -- CMD...` in `dir` with stdin from /dev/null.
pub fn stallscope_run<S: AsRef<OsStr>>(dir: &Path, run_args: &[&str], cmd: &[S]) -> Output {
    stallscope_run_with(dir, run_args, cmd, |_| {})
}

/// Like `stallscope_run`, with a hook to adjust the command (environment, stdin) before it runs.
pub fn stallscope_run_with<S: AsRef<OsStr>>(
    dir: &Path,
    run_args: &[&str],
    cmd: &[S],
    adjust: impl FnOnce(&mut Command),
) -> Output {
    let mut c = Command::new(stallscope());
    c.arg("run")
        .args(run_args)
        .arg("--")
        .args(cmd)
        .current_dir(dir)
        .stdin(Stdio::null());
    adjust(&mut c);
    output_within(c, RUN_TIMEOUT)
}

/// No test program runs for more than a few seconds: a run still going after this has hung.
pub const RUN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `c` to completion like `Command::output`, but fails the test (instead of hanging it) when
/// it is still running after `limit`: it and its direct children are then killed with SIGKILL.
pub fn output_within(mut c: Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    let description = format!("{c:?}");
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {description}: {e}"));
    let mut pipes: Vec<Box<dyn Read + Send>> = vec![
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    ];
    let readers: Vec<std::thread::JoinHandle<Vec<u8>>> = pipes
        .drain(..)
        .map(|mut pipe| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        })
        .collect();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if start.elapsed() > limit {
            let children = child_pids(child.id());
            for pid in &children {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            let _ = child.kill();
            let _ = child.wait();
            let out: Vec<Vec<u8>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
            panic!(
                "{description} was still running after {limit:?} (hung); killed it and its children \
                 {children:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&out[0]),
                String::from_utf8_lossy(&out[1])
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut out: Vec<Vec<u8>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let stderr = out.pop().unwrap();
    let stdout = out.pop().unwrap();
    Output {
        status,
        stdout,
        stderr,
    }
}

/// The direct children of a process, from /proc/PID/task/*/children.
fn child_pids(pid: u32) -> Vec<i32> {
    let mut pids = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
                pids.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    pids
}

/// Runs CMD directly (no profiler) in `dir`, with stdin from /dev/null.
pub fn plain_run<S: AsRef<OsStr>>(
    dir: &Path,
    cmd: &[S],
    adjust: impl FnOnce(&mut Command),
) -> Output {
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]).current_dir(dir).stdin(Stdio::null());
    adjust(&mut c);
    output_within(c, RUN_TIMEOUT)
}

/// A readable account of a finished process, for assertion messages.
pub fn describe(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The exit code of a process that exited (panics if it was killed by a signal).
pub fn exit_code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("stallscope did not exit normally\n{}", describe(out)))
}

/// The status as a shell reports it: the exit code, or 128 + the signal that killed the process
/// (`stallscope run` ends the way its program did: killed by the same signal).
pub fn shell_status(out: &Output) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (out.status.code(), out.status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => panic!("neither exited nor killed\n{}", describe(out)),
    }
}

/// Runs `stallscope run -o DIR/NAME [ARGS] -- CMD`, asserts that it ended with `expect_code` (as
/// a shell reports it: 128 + N for a program killed by signal N), and returns the run's output and
/// the profile path.
pub fn profile<S: AsRef<OsStr>>(
    dir: &Path,
    name: &str,
    run_args: &[&str],
    cmd: &[S],
    expect_code: i32,
) -> (Output, PathBuf) {
    profile_with(dir, name, run_args, cmd, expect_code, |_| {})
}

/// Like `profile`, with a hook to adjust stallscope's command (its environment) before it runs.
pub fn profile_with<S: AsRef<OsStr>>(
    dir: &Path,
    name: &str,
    run_args: &[&str],
    cmd: &[S],
    expect_code: i32,
    adjust: impl FnOnce(&mut Command),
) -> (Output, PathBuf) {
    let path = dir.join(name);
    let path_str = path.to_str().unwrap().to_string();
    let mut args = vec!["-o", path_str.as_str()];
    args.extend_from_slice(run_args);
    let out = stallscope_run_with(dir, &args, cmd, adjust);
    assert_eq!(
        shell_status(&out),
        expect_code,
        "unexpected exit status\n{}",
        describe(&out)
    );
    assert!(
        path.is_file(),
        "no profile at {}\n{}",
        path.display(),
        describe(&out)
    );
    (out, path)
}

/// `stallscope report --json FILE`, parsed; asserts that it succeeded.
pub fn report_json(file: &Path) -> Value {
    let out = Command::new(stallscope())
        .args(["report", "--json"])
        .arg(file)
        .output()
        .expect("running stallscope report");
    assert!(
        out.status.success(),
        "stallscope report --json {} failed\n{}",
        file.display(),
        describe(&out)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "report is not JSON: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(
        report["schema"],
        "stallscope.report/1",
        "unexpected schema in report of {}",
        file.display()
    );
    assert_invariants(&report, file);
    report
}

/// Every thread-state category's key in the report's `threads[].states` (`<key>_ns`): with
/// `unaccounted_ns` they add up to the thread's life (docs/STATES.md).
#[allow(unused_imports)] // each test binary uses a different subset
pub use stallscope::analysis::states::CATEGORY_KEYS as STATE_KEYS;

/// The report's main thread.
pub fn main_thread(r: &Value) -> &Value {
    r["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .find(|t| t["main"] == true)
        .expect("a main thread")
}

/// What no report may say, whatever the program (one number per concept): a thread
/// spends at most its life in the allocator or waiting for locks, and at most its CPU time (and
/// its allocator calls' measured time) on a CPU in the allocator; no share above 100%; no stake
/// above the wall time; at least as many threads counted as rows shown, and as took any one lock;
/// the parallel-efficiency finding states the working threads' efficiency. Checked on every
/// report the tests read.
pub fn assert_invariants(r: &Value, file: &Path) {
    let at = file.display();
    let wall = r["wall_ns"].as_u64().unwrap_or(0);
    let threads = r["threads"].as_array().map_or(&[][..], |v| v.as_slice());
    for t in threads {
        let n = |k: &str| t[k].as_u64().unwrap_or(0);
        assert!(
            n("alloc_ns") <= n("wall_ns"),
            "{at}: allocator time above the thread's life: {t:#}"
        );
        assert!(
            n("lock_wait_ns") <= n("wall_ns"),
            "{at}: lock wait above the thread's life: {t:#}"
        );
        assert!(
            n("alloc_cpu_ns") <= n("cpu_ns"),
            "{at}: allocator CPU time above the thread's: {t:#}"
        );
        assert!(
            n("alloc_ns") == 0 || n("alloc_cpu_ns") <= n("alloc_ns"),
            "{at}: allocator CPU time above the calls' time: {t:#}"
        );
    }
    // The allocator functions' times split the threads' allocator time (rounding aside).
    let calls_time: u64 = threads
        .iter()
        .map(|t| t["alloc_ns"].as_u64().unwrap_or(0))
        .sum();
    let functions: u64 = r["alloc"]["functions"].as_object().map_or(0, |f| {
        f.values().map(|f| f["time_ns"].as_u64().unwrap_or(0)).sum()
    });
    assert!(
        functions <= calls_time + calls_time / 1000 + 5 + threads.len() as u64,
        "{at}: the allocator functions' time {functions} ns above the threads' {calls_time} ns"
    );
    if let Some(count) = r["thread_count"].as_u64() {
        assert!(
            count >= threads.len() as u64,
            "{at}: thread_count {count} < {} rows",
            threads.len()
        );
        for l in r["locks"].as_array().map_or(&[][..], |v| v.as_slice()) {
            assert!(
                l["threads"].as_u64().unwrap_or(0) <= count,
                "{at}: more threads took a lock than ran ({count}): {l:#}"
            );
        }
    }
    // Every lock wait the threads' figures count has a row: the timed locks' waits and those
    // seen only by sampling add up to the threads' lock wait (rounding aside).
    let list = |k: &str| r[k].as_array().map_or(&[][..], |v| v.as_slice());
    let rows: u64 = list("locks")
        .iter()
        .chain(list("unhooked_locks"))
        .map(|l| l["wait_ns"].as_u64().unwrap_or(0))
        .sum();
    let waited: u64 = threads
        .iter()
        .map(|t| t["lock_wait_ns"].as_u64().unwrap_or(0))
        .sum();
    let slack = waited / 100
        + 1000 * (list("locks").len() + list("unhooked_locks").len() + threads.len()) as u64;
    assert!(
        rows.abs_diff(waited) <= slack,
        "{at}: the lock rows' waits {rows} ns, the threads' lock wait {waited} ns"
    );
    if wall > 0 {
        for f in r["findings"].as_array().map_or(&[][..], |v| v.as_slice()) {
            if let Some(stake) = f["stake_ns"].as_u64() {
                assert!(
                    stake <= wall,
                    "{at}: a stake above the wall time ({wall} ns): {f:#}"
                );
            }
        }
    }
    if let Some(edges) = r["wait_for"]["edges"].as_array() {
        let n = |e: &Value, k: &str| e[k].as_u64().unwrap_or(0);
        let begun: u64 = edges.iter().map(|e| n(e, "waits_begun")).sum();
        assert!(
            begun <= n(&r["wait_for"], "waits"),
            "{at}: {begun} waits begun on the edges, more than recorded: {:#}",
            r["wait_for"]["waits"]
        );
        for e in edges {
            assert!(
                n(e, "waits_begun") <= n(e, "waits") && n(e, "woken_tail_ns") <= n(e, "wait_ns"),
                "{at}: {e:#}"
            );
        }
    }
    let share_ok = |v: &Value| v.as_f64().is_none_or(|x| (0.0..=1.0 + 1e-9).contains(&x));
    assert!(
        share_ok(&r["parallel_efficiency"]["value"]),
        "{at}: {:#}",
        r["parallel_efficiency"]
    );
    assert!(
        share_ok(&r["working_efficiency"]["value"]),
        "{at}: {:#}",
        r["working_efficiency"]
    );
    // One number for one concept: the parallel-efficiency finding states the model's working
    // threads' efficiency, not a figure of its own.
    if let Some(f) = r["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["id"] == "parallel-efficiency"))
    {
        let value = r["working_efficiency"]["value"]
            .as_f64()
            .unwrap_or_else(|| panic!("{at}: a parallel-efficiency finding without the figure"));
        let pct = format!("{:.1}%", value * 100.0);
        assert!(
            f["title"].as_str().unwrap_or("").contains(&pct),
            "{at}: the finding does not state the working threads' efficiency {pct}: {f:#}"
        );
    }
    assert!(
        share_ok(&r["alloc"]["share_of_thread_time"]),
        "{at}: {:#}",
        r["alloc"]
    );
    for g in r["omp_regions"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
    {
        assert!(share_ok(&g["barrier_share"]), "{at}: {g:#}");
    }
    for g in r["omp_runs"].as_array().map_or(&[][..], |v| v.as_slice()) {
        assert!(share_ok(&g["barrier_share"]), "{at}: {g:#}");
    }
}

/// Profile files (`*.prof`) directly in `dir`, sorted.
pub fn prof_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "prof"))
        .collect();
    files.sort();
    files
}

/// Every profile of the runs made in `dir`: the launched processes' (`*.prof` in `dir`) and those
/// in their runs' directories (`*.prof.children/`, any file name: earlier images of the launched
/// process are kept there as `NAME.exec-N`), sorted.
pub fn run_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = prof_files(dir);
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() && path.to_string_lossy().ends_with(".children") {
            files.extend(
                std::fs::read_dir(&path)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|p| p.is_file()),
            );
        }
    }
    files.sort();
    files
}

/// The runs' directories (`*.children`) in `dir`, sorted.
pub fn children_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.to_string_lossy().ends_with(".children"))
        .collect();
    dirs.sort();
    dirs
}

/// An unsigned integer field of the report (panics with the path when absent or not a number).
pub fn num(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for key in path {
        cur = &cur[*key];
    }
    cur.as_u64().unwrap_or_else(|| {
        panic!(
            "report field {} is not an unsigned number: {cur}",
            path.join(".")
        )
    })
}

/// Counts of one allocator function group of the report: (calls, bytes, time_ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FnStats {
    pub calls: u64,
    pub bytes: u64,
    pub time_ns: u64,
}

pub const FUNCTIONS: [&str; 5] = ["malloc", "calloc", "realloc", "free", "aligned"];

pub fn fn_stats(report: &Value, function: &str) -> FnStats {
    let f = &report["alloc"]["functions"][function];
    FnStats {
        calls: num(f, &["calls"]),
        bytes: num(f, &["bytes"]),
        time_ns: num(f, &["time_ns"]),
    }
}

/// Allocation calls as heaptrack counts them: every function that returns memory (not free).
pub fn allocation_calls(report: &Value) -> u64 {
    ["malloc", "calloc", "realloc", "aligned"]
        .iter()
        .map(|f| fn_stats(report, f).calls)
        .sum()
}

/// Sum of `count` over a histogram array of the report.
pub fn histogram_total(hist: &Value) -> u64 {
    hist.as_array()
        .unwrap_or_else(|| panic!("histogram is not an array: {hist}"))
        .iter()
        .map(|b| num(b, &["count"]))
        .sum()
}

/// The report's lock entry with this address, if any. The address may be written as a number or
/// as a hexadecimal string ("0x...").
pub fn find_lock(report: &Value, address: u64) -> Option<&Value> {
    report["locks"]
        .as_array()
        .expect("report.locks is an array")
        .iter()
        .find(|l| parse_address(&l["address"]) == Some(address))
}

pub fn parse_address(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let s = s.trim();
            let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
            match hex {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => s.parse().ok(),
            }
        }
        _ => None,
    }
}

/// The command line recorded in a report, as strings.
pub fn command_of(report: &Value) -> Vec<String> {
    report["command"]
        .as_array()
        .unwrap_or_else(|| panic!("report.command is not an array: {}", report["command"]))
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_string())
        .collect()
}

/// `/usr/bin/python3` when it exists (`python3` on PATH may be a pyenv shim), else `python3`.
pub fn python3() -> String {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3".into()
    } else {
        "python3".into()
    }
}

// ---- bench ----

/// Runs `stallscope bench ARGS... --export-json FILE --no-progress` in a temporary directory and
/// returns the parsed export and the terminal output, failing the test on a non-zero exit.
pub fn bench_json(name: &str, args: &[&str]) -> (Value, String) {
    let dir = TempDir::new(&format!("bench-{name}"));
    let json_path = dir.join(&format!("{name}.json"));
    let output = Command::new(stallscope())
        .arg("bench")
        .args(args)
        .arg("--export-json")
        .arg(&json_path)
        .arg("--no-progress")
        .output()
        .expect("start stallscope");
    assert_success(&output);
    let json = std::fs::read(&json_path).expect("JSON export written");
    (
        serde_json::from_slice(&json).expect("valid JSON export"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "stallscope failed: {}",
        describe(output)
    );
}

/// A number of bench's export (panics with the key when absent).
pub fn f64_of(value: &Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing or not a number in {value}"))
}

static MACHINE: Mutex<()> = Mutex::new(());

/// The machine for one test at a time: the harness runs a file's tests in parallel, and a test
/// whose figures depend on the threads running at once (contention, shares of a critical path,
/// utilization) would measure the other tests' load. Held for the test's run.
pub fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether other processes kept the profiled threads off the CPUs for more than `limit` of their
/// summed lives (a loaded machine: `concurrency.other_runnable_ns`, from the kernel's run delay).
/// A test whose program must contend then skips with the message returned, instead of failing
/// because its threads seldom ran at the same time; without kernel figures it says nothing.
pub fn starved(report: &Value, limit: f64) -> Option<String> {
    let other = report["concurrency"]["other_runnable_ns"].as_f64()?;
    let lives: f64 = report["threads"]
        .as_array()?
        .iter()
        .filter_map(|t| t["wall_ns"].as_f64())
        .sum();
    let share = other / lives.max(1.0);
    (share > limit).then(|| {
        format!(
            "the run was starved: its threads waited for CPUs other processes held {:.1}% of their lives (more than {:.0}%), so they seldom ran together",
            share * 100.0,
            limit * 100.0
        )
    })
}

/// Says on both outputs that `test` skips its assertions, and why: `SKIPPED <test>: <why>`.
///
/// For a test of a hardware or timing effect (false sharing, cache misses, CPUs as fast with two
/// threads busy as with one) the effect must first be seen in the run's own measurements: a
/// machine that did not produce it (its cores share a line for free, its caches hide a scattered
/// heap, its CPUs slow down together) leaves nothing to detect, and the test says so here and
/// returns; where the effect did happen, a detector that misses it still fails. Like [`starved`]
/// for load, this holds in CI too: a skip is printed, never silent.
pub fn skipped(test: &str, why: &str) {
    eprintln!("SKIPPED {test}: {why}");
    println!("SKIPPED {test}: {why}");
}

/// The ids of a report's findings, in order.
pub fn finding_ids(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["id"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A report's findings, one per `separator`-joined part: severity, id, title ("(no findings)"
/// without any), for a test's failure message.
pub fn findings_text(r: &Value, separator: &str) -> String {
    let lines: Vec<String> = r["findings"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .map(|f| {
            format!(
                "{} [{}] {}",
                f["severity"].as_str().unwrap_or("").to_uppercase(),
                f["id"].as_str().unwrap_or(""),
                f["title"].as_str().unwrap_or("")
            )
        })
        .collect();
    if lines.is_empty() {
        "(no findings)".into()
    } else {
        lines.join(separator)
    }
}
