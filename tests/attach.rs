//! `stallscope attach PID`: windows of recording in a process started with `run --paused`, and
//! the refusals for processes it cannot attach to. No timing is asserted: each program runs on
//! fixed work slowed by sleeps (seconds), and the checks are on counts and outcomes.

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Rounds of tests/attach_programs/alloc_locks.c: each is 2,000 allocations and 250 lock pairs
/// per thread (4 threads), then a 10 ms sleep: 400 rounds run for at least 4 s.
const ROUNDS: u64 = 400;
const PER_ROUND_MALLOCS: u64 = 4 * 2000;

fn build(dir: &Path) -> PathBuf {
    compile_file(dir, &test_source("attach_programs", "alloc_locks.c"), &[])
}

/// A command started by a test, killed (with its children) if the test fails first.
struct Started {
    child: Option<Child>,
    stdout: Option<BufReader<std::process::ChildStdout>>,
}

impl Started {
    fn spawn(mut c: Command) -> Started {
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the program");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Started {
            child: Some(child),
            stdout: Some(stdout),
        }
    }

    /// Waits for the program's "ready" line.
    fn ready(&mut self) {
        let mut line = String::new();
        self.stdout.as_mut().unwrap().read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n", "the program's first line");
    }

    fn id(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits for the end (at most RUN_TIMEOUT); returns the whole stdout ("ready" included).
    fn finish(mut self) -> Output {
        let mut child = self.child.take().unwrap();
        let mut rest = String::from("ready\n");
        self.stdout
            .take()
            .unwrap()
            .read_to_string(&mut rest)
            .unwrap();
        let mut stderr = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(started.elapsed() < RUN_TIMEOUT, "the program did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: rest.into_bytes(),
            stderr,
        }
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            for pid in descendants(c.id()) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The process's descendants (children first), from /proc/PID/task/*/children.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in text
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// The descendant of `root` running `exe`.
fn find_program(root: u32, exe: &Path) -> u32 {
    let started = Instant::now();
    loop {
        for pid in descendants(root) {
            if std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe) {
                return pid;
            }
        }
        assert!(
            started.elapsed() < RUN_TIMEOUT,
            "{} never started",
            exe.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn paused(dir: &Path, cmd: &[&str]) -> Started {
    let mut c = Command::new(stallscope());
    c.args(["run", "--paused", "--"]).args(cmd).current_dir(dir);
    Started::spawn(c)
}

fn attach(dir: &Path, pid: u32, out: &Path, duration: Option<&str>) -> Output {
    let mut c = Command::new(stallscope());
    c.arg("attach").arg("-o").arg(out).current_dir(dir);
    if let Some(d) = duration {
        c.args(["--duration", d]);
    }
    c.arg(pid.to_string()).stdin(Stdio::null());
    output_within(c, RUN_TIMEOUT)
}

fn attach_ok(dir: &Path, pid: u32, out: &Path, duration: Option<&str>) -> Value {
    let o = attach(dir, pid, out, duration);
    assert!(o.status.success(), "attach failed\n{}", describe(&o));
    report_json(out)
}

fn mallocs(report: &Value) -> u64 {
    fn_stats(report, "malloc").calls
}

fn lock_acquisitions(report: &Value) -> u64 {
    report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| num(l, &["acquisitions"]))
        .sum()
}

fn unprofiled(exe: &Path, rounds: u64) -> Output {
    let mut c = Command::new(exe);
    c.arg(rounds.to_string()).stdin(Stdio::null());
    output_within(c, RUN_TIMEOUT)
}

#[test]
fn a_window_of_a_paused_program_then_it_goes_on_unchanged() {
    let dir = TempDir::new("attach-window");
    let exe = build(&dir);
    let rounds = ROUNDS.to_string();
    let plain = unprofiled(&exe, ROUNDS);
    assert_eq!(exit_code(&plain), 3, "{}", describe(&plain));

    let mut run = paused(&dir, &[exe.to_str().unwrap(), &rounds]);
    run.ready();
    let pid = find_program(run.id(), &exe);
    let fds_paused = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let file = dir.join("window.prof");
    let report = attach_ok(&dir, pid, &file, Some("0.5"));
    let fds_after = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let out = run.finish();

    // The program's output and status are its own.
    assert_eq!(out.stdout, plain.stdout, "{}", describe(&out));
    assert_eq!(exit_code(&out), 3, "{}", describe(&out));
    // Its descriptor table: the interposer's socket, the profile and the connection are in the
    // flusher's own table.
    assert_eq!(
        fds_after, fds_paused,
        "descriptors of the program after the window"
    );
    // A paused run writes nothing of its own.
    assert_eq!(
        prof_files(&dir),
        vec![file.clone()],
        "only the window's profile"
    );

    // The window: its own profile, marked, counting what happened in it only.
    assert_eq!(report["attach"]["window"], 1, "{}", report["attach"]);
    assert_eq!(report["attach"]["how"], "paused");
    assert_eq!(report["attach"]["detached"], true);
    assert!(num(&report, &["attach", "process_ns"]) >= num(&report, &["attach", "window_ns"]));
    let calls = mallocs(&report);
    assert!(calls > 0, "allocations in the window");
    assert!(
        calls <= ROUNDS * PER_ROUND_MALLOCS,
        "{calls} allocations: more than the program makes"
    );
    let frees = fn_stats(&report, "free").calls;
    assert!(
        frees.abs_diff(calls) <= 4 * 64 + 4,
        "frees follow allocations one for one: {frees} vs {calls}"
    );
    let locks = lock_acquisitions(&report);
    assert!(
        locks > 0 && locks <= ROUNDS * 4 * 250 + 4,
        "{locks} lock acquisitions"
    );
    let text = Command::new(stallscope())
        .arg("report")
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("attached    for ") && text.contains("locks held at its start are not seen"),
        "{text}"
    );
}

#[test]
fn attach_twice_in_a_row() {
    let dir = TempDir::new("attach-twice");
    let exe = build(&dir);
    let rounds = ROUNDS.to_string();
    let plain = unprofiled(&exe, ROUNDS);
    let mut run = paused(&dir, &[exe.to_str().unwrap(), &rounds]);
    run.ready();
    let pid = find_program(run.id(), &exe);
    let first = attach_ok(&dir, pid, &dir.join("first.prof"), Some("0.3"));
    // The second window ends on Ctrl-C (SIGINT to attach), once it has opened.
    let mut c = Command::new(stallscope());
    c.arg("attach")
        .arg("-o")
        .arg(dir.join("second.prof"))
        .arg(pid.to_string())
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut ctrl_c = c.spawn().unwrap();
    let mut err = BufReader::new(ctrl_c.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("recording"), "{line}");
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(ctrl_c.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = ctrl_c.wait().unwrap();
    assert!(
        status.success(),
        "attach ended by Ctrl-C: {status:?}\n{rest}"
    );
    assert!(rest.contains("detached; the process goes on"), "{rest}");
    let second = report_json(&dir.join("second.prof"));
    let out = run.finish();
    assert_eq!(out.stdout, plain.stdout, "{}", describe(&out));
    assert_eq!(exit_code(&out), 3);
    for (n, r) in [(1, &first), (2, &second)] {
        assert_eq!(r["attach"]["window"], n);
        assert_eq!(r["attach"]["detached"], true);
        assert!(mallocs(r) > 0, "window {n} saw allocations");
    }
    // Each window counts its own calls, not the last one's too.
    assert!(
        mallocs(&first) + mallocs(&second) <= ROUNDS * PER_ROUND_MALLOCS,
        "{} + {} allocations: more than the program makes",
        mallocs(&first),
        mallocs(&second)
    );
    assert!(num(&second, &["attach", "process_ns"]) > num(&first, &["attach", "process_ns"]));
}

#[test]
fn the_program_ends_while_recorded() {
    let dir = TempDir::new("attach-exit");
    let exe = build(&dir);
    let plain = unprofiled(&exe, 100);
    let mut run = paused(&dir, &[exe.to_str().unwrap(), "100"]);
    run.ready();
    let pid = find_program(run.id(), &exe);
    let file = dir.join("to-the-end.prof");
    // No duration: attach returns when the program has gone.
    let report = attach_ok(&dir, pid, &file, None);
    let out = run.finish();
    assert_eq!(out.stdout, plain.stdout);
    assert_eq!(exit_code(&out), 3);
    assert_eq!(
        report["complete"], true,
        "the program's own END ends the window"
    );
    assert_eq!(report["exit_code"], 3);
    assert_eq!(report["attach"]["detached"], false);
    assert!(mallocs(&report) > 0);
}

#[test]
fn a_paused_run_records_nothing_and_children_can_be_attached() {
    let dir = TempDir::new("attach-child");
    let exe = build(&dir);
    let plain = unprofiled(&exe, ROUNDS);
    // Nothing attached: the same output, the same status, no profile.
    let mut c = Command::new(stallscope());
    c.args(["run", "--paused", "--"])
        .arg(&exe)
        .arg("20")
        .current_dir(dir.path())
        .stdin(Stdio::null());
    let out = output_within(c, RUN_TIMEOUT);
    assert_eq!(
        out.stdout,
        unprofiled(&exe, 20).stdout,
        "{}",
        describe(&out)
    );
    assert_eq!(exit_code(&out), 3);
    assert!(prof_files(&dir).is_empty(), "{:?}", prof_files(&dir));

    // A child the paused program starts (a shell that forks and execs it) is paused too.
    let script = format!("{} {ROUNDS}; echo shell-after $?", exe.display());
    let mut run = paused(&dir, &["sh", "-c", &script]);
    run.ready();
    let pid = find_program(run.id(), &exe);
    assert_ne!(pid, run.id());
    let report = attach_ok(&dir, pid, &dir.join("child.prof"), Some("0.3"));
    assert!(mallocs(&report) > 0);
    let out = run.finish();
    let mut expected = plain.stdout.clone();
    expected.extend_from_slice(b"shell-after 3\n");
    assert_eq!(out.stdout, expected, "{}", describe(&out));
}

#[test]
fn attach_to_a_program_started_without_stallscope() {
    // ptrace: one thread waiting in a system call is stopped and made to dlopen the interposer,
    // then put back; the others run on.
    let dir = TempDir::new("attach-inject");
    let exe = build(&dir);
    let plain = unprofiled(&exe, ROUNDS);
    let mut c = Command::new(&exe);
    c.arg(ROUNDS.to_string());
    let mut target = Started::spawn(c);
    target.ready();
    let pid = target.id();
    let fds_before = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let first = attach_ok(&dir, pid, &dir.join("first.prof"), Some("0.5"));
    assert_ne!(state_of(pid), 't', "not left traced");
    assert_ne!(state_of(pid), 'T', "not left stopped");
    let second = attach_ok(&dir, pid, &dir.join("second.prof"), Some("0.3"));
    let fds_after = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let out = target.finish();
    assert_eq!(out.stdout, plain.stdout, "{}", describe(&out));
    assert_eq!(exit_code(&out), 3, "{}", describe(&out));
    assert_eq!(fds_after, fds_before, "the program's descriptors");
    for (n, r) in [(1, &first), (2, &second)] {
        assert_eq!(r["attach"]["window"], n);
        assert_eq!(r["attach"]["how"], "injected");
        assert_eq!(r["attach"]["detached"], true);
        assert!(mallocs(r) > 0, "window {n} saw allocations");
        assert!(lock_acquisitions(r) > 0, "window {n} saw locks");
    }
    assert!(mallocs(&first) + mallocs(&second) <= ROUNDS * PER_ROUND_MALLOCS);
}

/// Code built with -fno-plt (every Rust program's) or linked with -z now calls the C library
/// through its GOT (GLOB_DAT slots), not a PLT slot: loaded with ptrace, where the dynamic linker
/// bound no slot to the hooks, a window points those at the hooks too (and back at the end), or
/// it would count none of the program's calls.
#[test]
fn attach_counts_calls_made_through_the_got() {
    let dir = TempDir::new("attach-inject-got");
    let exe = compile_file(
        &dir,
        &test_source("attach_programs", "alloc_locks.c"),
        &["-fno-plt", "-Wl,-z,now"],
    );
    let plain = unprofiled(&exe, ROUNDS / 2);
    let mut c = Command::new(&exe);
    c.arg((ROUNDS / 2).to_string());
    let mut target = Started::spawn(c);
    target.ready();
    let pid = target.id();
    let first = attach_ok(&dir, pid, &dir.join("first.prof"), Some("0.5"));
    let second = attach_ok(&dir, pid, &dir.join("second.prof"), Some("0.3"));
    let out = target.finish();
    assert_eq!(out.stdout, plain.stdout, "{}", describe(&out));
    assert_eq!(exit_code(&out), 3, "{}", describe(&out));
    for (n, r) in [(1, &first), (2, &second)] {
        assert_eq!(r["attach"]["how"], "injected");
        assert!(mallocs(r) > 0, "window {n} counted the allocations");
        assert!(lock_acquisitions(r) > 0, "window {n} counted the locks");
    }
    assert!(mallocs(&first) + mallocs(&second) <= ROUNDS / 2 * PER_ROUND_MALLOCS);
}

#[test]
fn a_thread_that_only_computes_is_sampled() {
    // It makes no call the interposer hooks: the window gives it a CPU timer when it opens.
    let dir = TempDir::new("attach-compute");
    let exe = compile_file(&dir, &test_source("attach_programs", "compute_only.c"), &[]);
    let plain = {
        let mut c = Command::new(&exe);
        c.arg("300").stdin(Stdio::null());
        output_within(c, RUN_TIMEOUT)
    };
    let mut c = Command::new(&exe);
    c.arg("300");
    let mut target = Started::spawn(c);
    target.ready();
    let mut tid = String::new();
    target.stdout.as_mut().unwrap().read_line(&mut tid).unwrap();
    let tid: u64 = tid.trim().parse().unwrap();
    let report = attach_ok(&dir, target.id(), &dir.join("compute.prof"), Some("1"));
    let out = target.finish();
    let last = |o: &[u8]| {
        String::from_utf8_lossy(o)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(last(&out.stdout), last(&plain.stdout), "{}", describe(&out));
    assert!(last(&plain.stdout).starts_with("result "));
    let worker = report["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tid"] == tid)
        .unwrap_or_else(|| {
            panic!(
                "no record of the computing thread {tid}: {}",
                report["threads"]
            )
        });
    assert!(num(worker, &["cpu_ns"]) > 0, "{worker}");
    assert!(
        num(&report, &["sampling", "cpu_samples"]) > 0,
        "{}",
        report["sampling"]
    );
}

fn assert_refused(o: &Output, words: &[&str]) {
    assert_eq!(exit_code(o), 2, "{}", describe(o));
    let err = String::from_utf8_lossy(&o.stderr);
    for w in words {
        assert!(err.contains(w), "no {w:?} in the refusal:\n{err}");
    }
}

/// The process's state letter (T: stopped, t: stopped by a tracer).
fn state_of(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.chars().next().unwrap()
}

#[test]
fn refusals_leave_the_target_running() {
    let dir = TempDir::new("attach-refuse");
    let src = test_source("attach_programs", "alloc_locks.c");
    let exe = build(&dir);
    let plain = unprofiled(&exe, ROUNDS);

    // A program profiled from its start by `run` (not paused).
    let mut c = Command::new(stallscope());
    c.args(["run", "-q", "-o"])
        .arg(dir.join("whole.prof"))
        .arg("--")
        .arg(&exe)
        .arg(ROUNDS.to_string())
        .current_dir(dir.path());
    let mut run = Started::spawn(c);
    run.ready();
    let pid = find_program(run.id(), &exe);
    let o = attach(&dir, pid, &dir.join("no.prof"), Some("0.2"));
    assert_refused(&o, &["started under `stallscope run`", "--paused"]);
    assert!(!dir.join("no.prof").exists(), "no profile is left behind");
    assert_eq!(run.finish().stdout, plain.stdout);

    // A program that cannot be traced: strace holds it already.
    if have_tool("strace", &["-V"], "strace") {
        let mut c = Command::new("strace");
        c.args(["-f", "-qq", "-o", "/dev/null"])
            .arg(&exe)
            .arg(ROUNDS.to_string());
        let mut traced = Started::spawn(c);
        traced.ready();
        let pid = find_program(traced.id(), &exe);
        let o = attach(&dir, pid, &dir.join("no.prof"), Some("0.2"));
        assert_refused(&o, &["being traced by process", "run --paused"]);
        assert_eq!(traced.finish().stdout, plain.stdout);
    }

    // Another user's process, without CAP_SYS_PTRACE (attach as nobody, the target as root).
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } == 0 && have_tool("setpriv", &["--version"], "util-linux") {
        let mut c = Command::new(&exe);
        c.arg(ROUNDS.to_string());
        let mut target = Started::spawn(c);
        target.ready();
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(stallscope())
        .args(["attach", "-o", "/tmp/never-written.prof"])
        .arg(target.id().to_string())
        .env("HOME", "/nonexistent")
        .current_dir("/");
        let o = output_within(c, RUN_TIMEOUT);
        assert_refused(&o, &["belongs to user 0", "run --paused"]);
        assert_ne!(state_of(target.id()), 't');
        assert_eq!(target.finish().stdout, plain.stdout);
    }

    // A statically linked program.
    if let Some(static_exe) = try_compile(
        "cc",
        dir.path(),
        &src,
        "alloc_locks_static",
        &["-static", "-pthread"],
        "libc6-dev",
    ) {
        let mut c = Command::new(&static_exe);
        c.arg(ROUNDS.to_string());
        let mut target = Started::spawn(c);
        target.ready();
        let o = attach(&dir, target.id(), &dir.join("no.prof"), Some("0.2"));
        assert_refused(&o, &["statically linked", "cannot load the interposer"]);
        assert_ne!(state_of(target.id()), 'T');
        let out = target.finish();
        assert_eq!(out.stdout, plain.stdout);
    }

    // A 32-bit program: it has a libc.so.6 and threads waiting in system calls (whose numbers
    // are i386's), but made to call dlopen with x86-64's registers it would run with arguments it
    // never passed.
    if let Some(exe32) = try_compile(
        "cc",
        dir.path(),
        &src,
        "alloc_locks_32",
        &["-m32", "-pthread"],
        "gcc-multilib",
    ) {
        let plain32 = unprofiled(&exe32, ROUNDS);
        let mut c = Command::new(&exe32);
        c.arg(ROUNDS.to_string());
        let mut target = Started::spawn(c);
        target.ready();
        let o = attach(&dir, target.id(), &dir.join("no.prof"), Some("0.2"));
        assert_refused(
            &o,
            &["not a 64-bit ELF program", "cannot load the interposer"],
        );
        assert_ne!(state_of(target.id()), 'T');
        assert!(!dir.join("no.prof").exists(), "no profile is left behind");
        assert_eq!(target.finish().stdout, plain32.stdout);
    }

    // A program in a seccomp sandbox that kills it for a system call it did not expect: loading
    // the interposer would (SIGSYS at dlopen's first open).
    let sandboxed = compile_file(&dir, &test_source("attach_programs", "sandboxed.c"), &[]);
    let mut c = Command::new(&sandboxed);
    c.arg("100");
    let mut target = Started::spawn(c);
    target.ready();
    // Its filter is in place once it sleeps (the only calls it makes then).
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(format!("/proc/{}/status", target.id()))
        .unwrap_or_default()
        .contains("Seccomp:\t2")
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = attach(&dir, target.id(), &dir.join("no.prof"), Some("0.2"));
    assert_refused(&o, &["seccomp filter", "cannot attach"]);
    assert!(!dir.join("no.prof").exists(), "no profile is left behind");
    let out = target.finish();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ready\ndone\n");

    // No such process.
    let o = attach(&dir, u32::MAX / 2, &dir.join("no.prof"), None);
    assert_refused(&o, &["no process"]);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `count` SET/GET pairs on one connection; every reply checked.
fn redis_requests(port: u16, tag: &str, count: usize) {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    for i in 0..count {
        let key = format!("{tag}:{i}");
        let value = format!("value {i} {}", "x".repeat(i % 300));
        let set = format!(
            "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
            key.len(),
            value.len()
        );
        w.write_all(set.as_bytes()).unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "+OK\r\n", "SET {key}");
        let get = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
        w.write_all(get.as_bytes()).unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, format!("${}\r\n", value.len()), "GET {key}");
        let mut data = vec![0u8; value.len() + 2];
        r.read_exact(&mut data).unwrap();
        assert_eq!(&data[..value.len()], value.as_bytes());
    }
}

#[test]
fn redis_answers_every_request_while_attached_and_after() {
    redis_attached(true);
}

#[test]
fn redis_started_without_stallscope_answers_every_request_while_attached_and_after() {
    redis_attached(false);
}

fn redis_attached(paused: bool) {
    if !have_tool("redis-server", &["--version"], "redis-server") {
        return;
    }
    let dir = TempDir::new("attach-redis");
    let port = free_port();
    let port_text = port.to_string();
    let mut c = if paused {
        let mut c = Command::new(stallscope());
        c.args(["run", "--paused", "-q", "--", "redis-server"]);
        c
    } else {
        Command::new("redis-server")
    };
    c.args(["--port", &port_text])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--io-threads", "2", "--io-threads-do-reads", "yes", "--dir"])
        .arg(dir.path())
        .current_dir(dir.path());
    let server = Started::spawn(c);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < RUN_TIMEOUT, "redis did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = if paused {
        descendants(server.id())[0]
    } else {
        server.id()
    };
    redis_requests(port, "before", 200);
    // Requests all through the window, from another thread.
    let client = std::thread::spawn(move || {
        for round in 0..10 {
            redis_requests(port, &format!("during{round}"), 100);
        }
    });
    let file = dir.join("redis.prof");
    let report = attach_ok(&dir, pid, &file, Some("1"));
    client
        .join()
        .expect("every request during the window answered");
    redis_requests(port, "after", 200);
    let second = attach_ok(&dir, pid, &dir.join("redis2.prof"), Some("0.3"));
    redis_requests(port, "after2", 100);
    assert_eq!(report["attach"]["detached"], true);
    assert_eq!(second["attach"]["window"], 2);
    assert!(
        !report["threads"].as_array().unwrap().is_empty(),
        "redis's threads were seen"
    );
    // Its allocator is jemalloc, which the program's calls are bound to (through GLOB_DAT slots):
    // the hooks forward there, and count the allocations of the requests in the first window.
    assert!(
        mallocs(&report) > 0,
        "the window counted redis's allocations"
    );
    // Still the same server: it ends normally on SIGTERM.
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let out = server.finish_any();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
}

impl Started {
    /// Like `finish`, for a program that prints no "ready" line.
    fn finish_any(mut self) -> Output {
        let mut child = self.child.take().unwrap();
        let mut rest = String::new();
        let _ = self.stdout.take().unwrap().read_to_string(&mut rest);
        let mut stderr = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .unwrap();
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(started.elapsed() < RUN_TIMEOUT, "the program did not end");
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: rest.into_bytes(),
            stderr,
        }
    }
}

/// A process that installs a seccomp filter while a window is open goes on as it would alone,
/// and the window ends there with END `sandbox`: the interposer's CPU timers, its flusher and its
/// calls at exit would each have been killed by the filter (the target died of SIGSYS before).
/// The program (tests/hostile_programs/seccomp_sandbox.c) installs the filter once the test has
/// seen the window open, and lets seccomp(2) filter every thread (TSYNC).
#[test]
fn a_window_ends_where_the_process_enters_a_seccomp_sandbox() {
    let dir = TempDir::new("attach-seccomp");
    let exe = compile_file(
        &dir,
        &test_source("hostile_programs", "seccomp_sandbox.c"),
        &[],
    );
    let trigger = dir.join("go");
    let mut c = Command::new(&exe);
    c.args(["seccomp", "2", trigger.to_str().unwrap()]);
    let mut target = Started::spawn(c);
    target.ready();
    let out = dir.join("window.prof");
    let deadline = Instant::now() + RUN_TIMEOUT;
    let mut tries = 0;
    let (mut attach, from_attach, mut said) = loop {
        tries += 1;
        let mut a = Command::new(stallscope());
        a.arg("attach")
            .arg("-o")
            .arg(&out)
            .arg(target.id().to_string())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut attach = a.spawn().expect("starting attach");
        let (lines, from_attach) = std::sync::mpsc::channel();
        let stderr = BufReader::new(attach.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        // The window is open (its timers armed) once attach says it records; then the filter.
        let mut said: Vec<String> = Vec::new();
        while !said.iter().any(|l| l.contains("recording")) {
            let left = deadline.saturating_duration_since(Instant::now());
            match from_attach.recv_timeout(left) {
                Ok(line) => said.push(line),
                Err(_) => break,
            }
        }
        if said.iter().any(|l| l.contains("recording")) {
            break (attach, from_attach, said);
        }
        let _ = attach.wait();
        // On a busy machine ptrace may find every thread running (the main one naps 20 ms at a
        // time): that refusal is attach's to give, and it says to try again.
        let busy = said.iter().any(|l| l.contains("waiting in a system call"));
        assert!(
            busy && tries < 10 && Instant::now() < deadline,
            "attach did not start recording: {said:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    std::fs::write(&trigger, b"").unwrap();
    let status = loop {
        if let Some(s) = attach.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = attach.kill();
            panic!("attach did not end with the window: {said:#?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    said.extend(from_attach.iter());
    let ended = target.finish();
    assert_eq!(
        String::from_utf8_lossy(&ended.stdout),
        "ready\nsandboxed seccomp threads 2 child 7\n",
        "{}",
        describe(&ended)
    );
    assert_eq!(exit_code(&ended), 0, "{}", describe(&ended));
    assert!(status.success(), "{said:#?}");
    assert!(
        said.iter()
            .any(|l| l.contains("installed a seccomp filter")),
        "{said:#?}"
    );
    let r = report_json(&out);
    assert_eq!(r["attach"]["window"], 1, "{r:#}");
    assert_eq!(r["attach"]["detached"], false);
    assert_eq!(r["complete"], true);
    assert!(r["sandbox"]["recorded_ns"].as_u64().unwrap() > 0, "{r:#}");
    assert!(mallocs(&r) > 0, "the window saw the workers' allocations");
}
