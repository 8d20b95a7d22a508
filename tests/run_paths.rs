//! Where `stallscope run` puts things, and what it says when it cannot:
//! an unwritable working directory is named with the OS error and the `-o` remedy before the
//! program runs; the interposer can be loaded by a program that switches to another user; the
//! command shown in a report keeps its quoting; a process tree leaves one profile per run.

mod common;
mod harness;

use common::*;
use harness::*;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Whether this test process runs as root (some checks need to become another user).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

const NOBODY: u32 = 65534;

#[test]
fn a_program_that_becomes_another_user_still_loads_the_preload() {
    // The interposer's library must be readable by every user: a program started as root that
    // drops to another user (sudo -u, setpriv, a daemon) and execs would otherwise get the
    // dynamic linker's "cannot be preloaded" error on its stderr (CPython's test_subprocess).
    if !is_root() {
        eprintln!("skipped: becoming another user needs root");
        return;
    }
    let python = python3();
    if !have_tool(&python, &["--version"], "python3") {
        return;
    }
    let dir = TempDir::new("other-user");
    let script = format!(
        "import subprocess, sys\n\
         r = subprocess.run(['sh', '-c', 'id -u; echo done >&2'], user={NOBODY}, group={NOBODY}, extra_groups=[])\n\
         sys.exit(r.returncode)\n"
    );
    let pair = assert_invisible(&Launch::new(&[python.as_str(), "-c", &script], dir.path()));
    assert_eq!(String::from_utf8_lossy(&pair.plain.stdout), "65534\n");
}

#[test]
fn setpriv_changes_user_under_stallscope() {
    // setpriv keeps its capabilities across setresuid on its one thread (PR_SET_KEEPCAPS, then
    // capset), then calls setresgid: glibc makes every thread it knows repeat the call and aborts
    // when the results differ, so the interposer's thread must not be one that lacks them.
    if !is_root() {
        eprintln!("skipped: becoming another user needs root");
        return;
    }
    if !have_tool("setpriv", &["--version"], "util-linux") {
        return;
    }
    let dir = TempDir::new("setpriv");
    assert_invisible(&Launch::new(
        &[
            "setpriv",
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "sh",
            "-c",
            "id -u; echo done >&2",
        ],
        dir.path(),
    ));
}

#[test]
fn a_thread_changes_the_user_of_every_thread_under_stallscope() {
    // setpriv's sequence on one thread, then setgroups, setresgid and setresuid from a second
    // thread while three others allocate: every call succeeds and every thread, the
    // interposer's included, ends as nobody, as without stallscope.
    if !is_root() {
        eprintln!("skipped: becoming another user needs root");
        return;
    }
    let dir = TempDir::new("setxid-threads");
    let exe = hostile_program(dir.path(), "setxid_threads.c", &[]);
    let pair = assert_invisible(&Launch::new(&[&exe], dir.path()));
    let out = String::from_utf8_lossy(&pair.plain.stdout);
    assert!(
        out.contains("alone: keepcaps 0 setresuid 0 capset 0 setresgid 0\n")
            && out.contains("from a thread: setgroups 0 setresgid 0 setresuid 0\n")
            && out.contains("every thread is nobody: yes\n"),
        "{}",
        pair.describe()
    );
    // The interposer's own waits around each change (the flusher leaves and a new one starts)
    // are not the program's: no lock, wait or edge names one of its words (they did, as
    // "ss_flusher_ready" and "ss_flusher_left", before the interposer's futex calls bypassed its
    // own syscall() hook).
    let report = report_json(&pair.profile);
    let text = report.to_string();
    assert!(
        !text.contains("ss_flusher_"),
        "the interposer's own futex words in the report: {:#}",
        report["wait_for"]
    );
}

/// `stallscope run ARGS` in `dir`, as user nobody when this test is root (root may write
/// anywhere), with a home of its own.
fn run_as_unprivileged(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(stallscope());
    c.arg("run")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME");
    if is_root() {
        c.uid(NOBODY).gid(NOBODY);
    }
    output_within(c, RUN_TIMEOUT)
}

#[test]
fn an_unwritable_working_directory_is_named_before_the_program_runs() {
    let dir = TempDir::new("unwritable");
    let home = TempDir::new("unwritable-home");
    let work = dir.join("readonly");
    std::fs::create_dir(&work).unwrap();
    let marker = dir.join("ran");
    use std::os::unix::fs::PermissionsExt;
    for d in [dir.path(), home.path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o555)).unwrap();
    let touch = format!("touch {}", marker.display());
    let out = run_as_unprivileged(&work, home.path(), &["--", "sh", "-c", &touch]);
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    assert!(!marker.exists(), "the program must not run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(work.to_str().unwrap()),
        "names the directory:\n{stderr}"
    );
    assert!(
        stderr.contains("Permission denied"),
        "gives the OS error:\n{stderr}"
    );
    assert!(
        stderr.contains("-o "),
        "names the remedy, -o FILE:\n{stderr}"
    );
    // With -o into a writable place the same command runs.
    let out_file = home.join("p.prof");
    let out = run_as_unprivileged(
        &work,
        home.path(),
        &[
            "-q",
            "-o",
            out_file.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &touch,
        ],
    );
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    assert!(marker.exists() && out_file.is_file(), "{}", describe(&out));
}

#[test]
fn an_unwritable_output_directory_is_named_too() {
    let dir = TempDir::new("unwritable-o");
    let home = TempDir::new("unwritable-o-home");
    use std::os::unix::fs::PermissionsExt;
    let closed = dir.join("closed");
    std::fs::create_dir(&closed).unwrap();
    for d in [dir.path(), home.path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).unwrap();
    let target = closed.join("p.prof");
    let out = run_as_unprivileged(
        home.path(),
        home.path(),
        &["-o", target.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(closed.to_str().unwrap()) && stderr.contains("Permission denied"),
        "{stderr}"
    );
    // A missing directory is named as such.
    let missing = dir.join("no/such/dir/p.prof");
    let out = run_as_unprivileged(
        home.path(),
        home.path(),
        &["-o", missing.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no/such/dir") && stderr.contains("No such file or directory"),
        "{stderr}"
    );
}

#[test]
fn a_missing_interposer_override_is_an_error_not_an_unprofiled_run() {
    // STALLSCOPE_PRELOAD_LIB names another build (benches compare two): a path that is not there
    // must not run the program unprofiled, with only the dynamic linker's warning on its stderr.
    let dir = TempDir::new("preload-lib-missing");
    let missing = dir.join("no-such-libstallscope.so");
    let prof = dir.join("p.prof");
    let out = Command::new(stallscope())
        .env("STALLSCOPE_PRELOAD_LIB", &missing)
        .args(["run", "-q", "-o", prof.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 2, "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("STALLSCOPE_PRELOAD_LIB") && stderr.contains(missing.to_str().unwrap()),
        "{stderr}"
    );
    assert!(!prof.exists(), "{}", describe(&out));
}

#[test]
fn the_command_in_a_report_keeps_its_quoting() {
    // An empty last argument, spaces and quotes: `--save ""` must not show as `--save`.
    let dir = TempDir::new("quoting");
    let argv = ["sh", "-c", "exit 0", "sh", "it's two words", "--save", ""];
    let (_, path) = profile(dir.path(), "q.prof", &[], &argv, 0);
    let report = report_json(&path);
    assert_eq!(command_of(&report), argv, "the JSON has every argument");
    let out = Command::new(stallscope())
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let shown = r#"sh -c 'exit 0' sh 'it'\''s two words' --save ''"#;
    assert!(
        text.contains(shown),
        "the text report shows the command as a shell would take it back, {shown}:\n{text}"
    );
}
