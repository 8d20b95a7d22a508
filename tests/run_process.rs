//! The launched process's life under `stallscope run`: exit statuses and signals pass through,
//! `_exit` and SIGKILL still leave a profile, stdio passes through byte for byte, and programs
//! that cannot be profiled (static, setuid) or an existing output file are refused before running.

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn exit_status_passes_through() {
    let dir = TempDir::new("exit7");
    let (_, path) = profile(dir.path(), "sh.prof", &[], &["sh", "-c", "exit 7"], 7);
    let report = report_json(&path);
    assert_eq!(report["exit_code"], 7, "report exit_code");
    assert!(
        report["signal"].is_null(),
        "no signal: {}",
        report["signal"]
    );
    assert_eq!(command_of(&report), ["sh", "-c", "exit 7"]);
    assert!(num(&report, &["wall_ns"]) > 0);
}

#[test]
fn underscore_exit_leaves_a_complete_profile() {
    let dir = TempDir::new("underscore-exit");
    let exe = compile(dir.path(), "underscore_exit.c", &[]);
    let (_, empty) = profile(
        dir.path(),
        "empty.prof",
        &[],
        &[exe.as_os_str(), "empty".as_ref()],
        3,
    );
    let (_, path) = profile(dir.path(), "exit.prof", &[], &[&exe], 3);
    let base = report_json(&empty);
    let report = report_json(&path);
    assert_eq!(report["exit_code"], 3);
    assert!(report["signal"].is_null());
    if !report["complete"].is_null() {
        assert_eq!(report["complete"], true, "_exit is a clean end");
    }
    let (b, r) = (fn_stats(&base, "malloc"), fn_stats(&report, "malloc"));
    assert_eq!(
        r.calls,
        b.calls + 1000,
        "the 1000 malloc before _exit: {r:?} vs {b:?}"
    );
    assert_eq!(r.bytes, b.bytes + 1000 * 40);
}

#[test]
fn sigkill_leaves_a_partial_profile_that_opens() {
    let dir = TempDir::new("sigkill");
    let exe = compile(dir.path(), "killed_midrun.c", &[]);
    let (out, path) = profile(dir.path(), "killed.prof", &[], &[&exe], 128 + 9);
    let report = report_json(&path);
    assert_eq!(
        report["complete"],
        false,
        "a SIGKILLed process cannot write its end\n{}",
        describe(&out)
    );
    assert_eq!(report["signal"], 9, "report signal");
    assert!(
        report["exit_code"].is_null(),
        "no exit code: {}",
        report["exit_code"]
    );
    // About 2.5 s of 100 malloc per ms were running; at least the first flush (after ~1 s) holds
    // tens of thousands of them.
    let mallocs = fn_stats(&report, "malloc").calls;
    assert!(
        mallocs >= 10_000,
        "allocations flushed before the kill: {mallocs}"
    );
    assert!(fn_stats(&report, "free").calls > 0);
}

#[test]
fn sigterm_gives_143() {
    let dir = TempDir::new("sigterm");
    let exe = compile(dir.path(), "raise_signal.c", &[]);
    let (out, path) = profile(
        dir.path(),
        "term.prof",
        &[],
        &[exe.as_os_str(), "15".as_ref()],
        128 + 15,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "raising 15\n");
    let report = report_json(&path);
    assert_eq!(report["signal"], 15);
    assert!(report["exit_code"].is_null());
    let (out, _) = profile(
        dir.path(),
        "abrt.prof",
        &[],
        &[exe.as_os_str(), "6".as_ref()],
        128 + 6,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "raising 6\n");
}

/// Every byte value, in an order that is not trivially periodic, 1 MiB.
fn binary_data() -> Vec<u8> {
    let mut x: u32 = 0x1234_5678;
    (0..(1 << 20))
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i < 256 { i as u8 } else { (x >> 11) as u8 }
        })
        .collect()
}

fn pipe_through(dir: &TempDir, name: &str, cmd: &[&str], data: &[u8]) -> std::process::Output {
    let out_path = dir.join(name);
    let mut child = Command::new(stallscope())
        .args(["run", "-o"])
        .arg(&out_path)
        .arg("--")
        .args(cmd)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning stallscope");
    let mut stdin = child.stdin.take().unwrap();
    let data = data.to_vec();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&data).expect("writing stdin");
    });
    let out = child.wait_with_output().expect("waiting for stallscope");
    writer.join().unwrap();
    assert!(out_path.is_file(), "profile written\n{}", describe(&out));
    out
}

#[test]
fn stdin_stdout_stderr_pass_through_byte_for_byte() {
    let dir = TempDir::new("stdio");
    let data = binary_data();

    let out = pipe_through(&dir, "cat.prof", &["cat"], &data);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    assert!(
        out.stdout == data,
        "stdout differs from stdin ({} vs {} bytes)",
        out.stdout.len(),
        data.len()
    );

    let out = pipe_through(&dir, "cat2.prof", &["sh", "-c", "cat >&2; exit 4"], &data);
    assert_eq!(
        exit_code(&out),
        4,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty(), "nothing on stdout");
    // The program's stderr comes first and intact; stallscope's summary may follow it.
    assert!(
        out.stderr.len() >= data.len() && out.stderr[..data.len()] == data[..],
        "stderr does not start with the program's {} bytes (got {} bytes)",
        data.len(),
        out.stderr.len()
    );
}

#[test]
fn existing_output_file_is_never_overwritten() {
    let dir = TempDir::new("no-overwrite");
    let existing = dir.join("existing.prof");
    std::fs::write(&existing, b"precious").unwrap();
    let marker = dir.join("ran");
    let out = stallscope_run(
        dir.path(),
        &["-o", existing.to_str().unwrap()],
        &["sh", "-c", &format!("echo x > {}", marker.display())],
    );
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    assert!(!marker.exists(), "the program must not run");
    assert_eq!(
        std::fs::read(&existing).unwrap(),
        b"precious",
        "the file is untouched"
    );
    assert!(!out.stderr.is_empty(), "a message says why");
}

#[test]
fn static_program_is_refused_without_running() {
    let dir = TempDir::new("static");
    let exe = compile(dir.path(), "marker.c", &["-static"]);
    let marker = dir.join("ran");
    let out = stallscope_run(
        dir.path(),
        &["-o", "static.prof"],
        &[exe.as_os_str(), marker.as_os_str()],
    );
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    assert!(
        !marker.exists(),
        "the static program must not run\n{}",
        describe(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("static"),
        "the message says the program is static:\n{stderr}"
    );
    assert!(prof_files(dir.path()).is_empty(), "no profile");
    // The same program linked dynamically runs (the test is not refusing everything).
    let exe = compile(dir.path(), "marker.c", &[]);
    let out = stallscope_run(
        dir.path(),
        &["-o", "dynamic.prof"],
        &[exe.as_os_str(), marker.as_os_str()],
    );
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    assert!(marker.exists());
}

#[test]
fn setuid_program_is_refused_without_running() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("setuid");
    let exe = compile(dir.path(), "marker.c", &[]);
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let marker = dir.join("ran");
    let out = stallscope_run(
        dir.path(),
        &["-o", "setuid.prof"],
        &[exe.as_os_str(), marker.as_os_str()],
    );
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    assert!(
        !marker.exists(),
        "the setuid program must not run\n{}",
        describe(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("setuid") || stderr.contains("set-user-id") || stderr.contains("setgid"),
        "the message says the program is setuid:\n{stderr}"
    );
}

#[test]
fn summary_on_stderr_after_the_run() {
    let dir = TempDir::new("summary");
    let exe = compile(dir.path(), "alloc_known.c", &[]);
    let (out, path) = profile(dir.path(), "s.prof", &[], &[&exe], 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(path.to_str().unwrap()) || stderr.contains("s.prof"),
        "the summary names the profile path:\n{stderr}"
    );
    let lower = stderr.to_lowercase();
    assert!(
        lower.contains("thread"),
        "the summary counts threads:\n{stderr}"
    );
    assert!(
        lower.contains("alloc"),
        "the summary gives allocator figures:\n{stderr}"
    );
}

#[test]
fn main_thread_pthread_exit_ends_with_status_0_and_a_complete_profile() {
    let dir = TempDir::new("pthread-exit");
    let exe = compile(dir.path(), "main_pthread_exit.c", &[]);
    let (_, empty) = profile(
        dir.path(),
        "empty.prof",
        &[],
        &[exe.as_os_str(), "empty".as_ref()],
        0,
    );
    let (out, path) = profile(dir.path(), "exit.prof", &[], &[&exe], 0);
    let base = report_json(&empty);
    let report = report_json(&path);
    assert_eq!(report["exit_code"], 0, "{}", describe(&out));
    assert_eq!(report["complete"], true, "the process ended normally");
    let (b, r) = (fn_stats(&base, "malloc"), fn_stats(&report, "malloc"));
    assert_eq!(
        r.calls,
        b.calls + 500,
        "the worker's 500 malloc after main left"
    );
    assert_eq!(r.bytes, b.bytes + 500 * 56);
    assert_eq!(report["threads"].as_array().map(Vec::len), Some(2));
}

#[test]
fn closing_all_descriptors_keeps_the_profile() {
    let dir = TempDir::new("close-fds");
    let exe = compile(dir.path(), "close_all_fds.c", &[]);
    let (out, path) = profile(dir.path(), "fds.prof", &[], &[&exe], 0);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    let report = report_json(&path);
    assert_eq!(report["complete"], true, "the program exited normally");
    let malloc = fn_stats(&report, "malloc");
    assert!(
        malloc.calls >= 3000 && malloc.bytes >= 3000 * 40,
        "all 3000 malloc(40) are counted: {malloc:?}"
    );
}

#[test]
fn program_killed_from_outside_leaves_a_partial_profile() {
    let dir = TempDir::new("killed-outside");
    let exe = compile(dir.path(), "killed_midrun.c", &[]);
    let path = dir.join("killed.prof");
    let run = Command::new(stallscope())
        .args(["run", "-o"])
        .arg(&path)
        .arg("--")
        .arg(&exe)
        .arg("forever")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting stallscope");
    // Whatever happens below, the never-ending program must not outlive the test.
    let program = KillOnDrop(wait_for_child(run.id()));
    // The profile is flushed about once a second while the program runs: within a few seconds
    // (the machine may be loaded) the file opens, as a partial profile with allocations in it.
    let started = std::time::Instant::now();
    let early = loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let live = path.is_file().then(|| report_json(&path));
        if let Some(live) = live.filter(|r| fn_stats(r, "malloc").calls > 0) {
            assert_eq!(
                live["complete"], false,
                "a running program's profile is partial"
            );
            break fn_stats(&live, "malloc").calls;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(6),
            "no allocations flushed to {} within 6 s",
            path.display()
        );
    };
    let waited = started.elapsed();
    if waited < std::time::Duration::from_millis(2500) {
        std::thread::sleep(std::time::Duration::from_millis(2500) - waited);
    }
    // SAFETY: kill has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(program.0, libc::SIGKILL) }, 0);
    let out = run.wait_with_output().expect("waiting for stallscope");
    assert_eq!(shell_status(&out), 128 + 9, "{}", describe(&out));
    let report = report_json(&path);
    assert_eq!(report["complete"], false);
    assert_eq!(report["signal"], 9);
    let mallocs = fn_stats(&report, "malloc").calls;
    assert!(
        mallocs >= 10_000,
        "allocations flushed before the kill: {mallocs}"
    );
    assert!(
        mallocs >= early,
        "later flushes only add: {early}, then {mallocs}"
    );
}

/// Kills a process with SIGKILL when dropped (also when the test panics).
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; a process already gone is fine.
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}

/// The pid of `parent`'s first child, waiting up to 5 s for it to appear.
fn wait_for_child(parent: u32) -> i32 {
    let started = std::time::Instant::now();
    loop {
        let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        if let Some(pid) = children
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "stallscope started no program"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The launched process is started as execvp would start it, with what a shell sees when that
/// fails: 127 for a command that is not there, 126 for a file that may not be run, a script
/// without `#!` run by /bin/sh, and a directory in PATH that holds a program of the name found as
/// plainly. Each is compared with the same command run directly (spawn.rs starts the child
/// without `Command`, in the supervisor's memory until its exec).
#[test]
fn a_command_that_cannot_start_ends_as_it_would_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("cannot-start");
    let plain_file = dir.join("not-executable");
    std::fs::write(&plain_file, "echo never\n").unwrap();
    let script = dir.join("no-shebang");
    std::fs::write(&script, "echo \"script ran with $1\"\nexit 4\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy(&script, bin.join("from-path")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (cmd, code, out) in [
        (vec!["./not-executable"], 126, ""),
        (vec!["./no-such-program"], 127, ""),
        (
            vec!["./no-shebang", "an argument"],
            4,
            "script ran with an argument\n",
        ),
        (vec!["from-path", "x"], 4, "script ran with x\n"),
    ] {
        let alone = plain_run(
            dir.path(),
            &["sh", "-c", "\"$@\"", "sh"]
                .iter()
                .chain(&cmd)
                .collect::<Vec<_>>(),
            |c| {
                c.env("PATH", &path);
            },
        );
        assert_eq!(
            shell_status(&alone),
            code,
            "alone: {cmd:?}\n{}",
            describe(&alone)
        );
        let run = stallscope_run_with(dir.path(), &["-q", "-o", "p.prof"], &cmd, |c| {
            c.env("PATH", &path);
        });
        assert_eq!(shell_status(&run), code, "{cmd:?}\n{}", describe(&run));
        assert_eq!(String::from_utf8_lossy(&run.stdout), out, "{cmd:?}");
        assert_eq!(
            String::from_utf8_lossy(&alone.stdout),
            out,
            "alone: {cmd:?}"
        );
        let _ = std::fs::remove_file(dir.join("p.prof"));
    }
    assert!(
        children_dirs(dir.path()).is_empty(),
        "no run's directory where no other process was profiled"
    );
}

/// A run whose program starts no other process makes no directory for others: it is made only by
/// the first process that writes there (docs/FORMAT.md), and the profiles of those still go there.
#[test]
fn a_run_of_one_process_makes_no_directory_for_others() {
    let dir = TempDir::new("one-process");
    // `test` is the shell's own: no other process is started before it looks.
    let probe = "test -d one.prof.children && echo made || echo none";
    let (out, path) = profile(dir.path(), "one.prof", &[], &["sh", "-c", probe], 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "none\n",
        "{}",
        describe(&out)
    );
    assert!(path.exists());
    assert!(
        children_dirs(dir.path()).is_empty(),
        "{:?}",
        children_dirs(dir.path())
    );
    let (_, path) = profile(
        dir.path(),
        "two.prof",
        &[],
        &["sh", "-c", "/bin/true; /bin/true; :"],
        0,
    );
    let run_dir = dir.join("two.prof.children");
    let others = std::fs::read_dir(&run_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", run_dir.display()))
        .count();
    assert_eq!(others, 2, "the two `true` processes of {}", path.display());
}

/// A `stallscope run` that is itself profiled runs as it would alone: its program is profiled with
/// its settings, and its child, which shares its memory until exec (spawn.rs), puts the signal
/// state back without the outer interposer's hooks, which would act on the inner supervisor's
/// own sampling (with the C library's `sigaction`, the outer profile said the supervisor "handles
/// SIGRTMIN+30" and CPU sampling stepped aside).
#[test]
fn a_profiled_run_keeps_its_own_sampling_signal() {
    let dir = TempDir::new("nested-run");
    let inner = dir.join("inner.prof");
    let (_, outer) = profile(
        dir.path(),
        "outer.prof",
        &["-q"],
        &[
            stallscope(),
            "run",
            "-q",
            "-o",
            inner.to_str().unwrap(),
            "--",
            "true",
        ],
        0,
    );
    // The inner run's program is profiled as the inner run asked: into its profile, not into the
    // outer run's directory (the exec hooks must not put the outer run's settings in its place).
    assert!(
        inner.exists(),
        "the inner run's profile {}",
        inner.display()
    );
    assert_eq!(command_of(&report_json(&inner)), ["true"]);
    assert!(
        children_dirs(dir.path()).is_empty(),
        "the outer run profiled one process: {:?}",
        children_dirs(dir.path())
    );
    let report = report_json(&outer);
    let sampling = &report["sampling"];
    assert_eq!(sampling["signal"], "SIGPROF", "{sampling}");
    assert!(sampling["moved_from"].is_null(), "{sampling}");
}
