//! The program sees the signal dispositions, mask, descriptors and limits it
//! would see without stallscope, Ctrl-C reaches it, signals sent to stallscope are passed on, and
//! a program killed by a signal leaves stallscope's parent the same wait status.

mod common;
mod harness;

use common::*;
use harness::*;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

fn sigstate(dir: &TempDir) -> std::path::PathBuf {
    hostile_program(dir.path(), "sigstate.c", &[])
}

#[test]
fn default_signal_state_is_inherited_unchanged() {
    let dir = TempDir::new("sigstate-default");
    let exe = sigstate(&dir);
    let pair = assert_invisible(&Launch::new(&[&exe], dir.path()));
    let out = String::from_utf8_lossy(&pair.plain.stdout);
    assert!(
        out.contains("ignored:\n"),
        "the plain run ignores nothing: {out}"
    );
}

#[test]
fn ignored_and_blocked_signals_at_start_are_inherited() {
    // As under nohup or `cmd &` in a script: SIGINT, SIGQUIT and SIGHUP ignored; and SIGPIPE and
    // SIGCHLD ignored, USR1 and TERM blocked (stallscope must still see its program end).
    let dir = TempDir::new("sigstate-nohup");
    let exe = sigstate(&dir);
    let mut launch = Launch::new(&[&exe], dir.path());
    launch.ignore = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGPIPE,
        libc::SIGCHLD,
    ];
    launch.block = vec![libc::SIGUSR1, libc::SIGTERM];
    let pair = assert_invisible(&launch);
    let out = String::from_utf8_lossy(&pair.plain.stdout);
    assert!(out.contains("ignored: 1 2 3 13 17\n"), "{out}");
    assert!(out.contains("blocked: 10 15\n"), "{out}");
}

#[test]
fn sigpipe_default_stays_default_and_ignored_stays_ignored() {
    // Rust's runtime ignores SIGPIPE before main, and Command resets it to the default in a child:
    // neither may leak into the program.
    let dir = TempDir::new("sigstate-pipe");
    let exe = sigstate(&dir);
    for ignore in [vec![], vec![libc::SIGPIPE]] {
        let mut launch = Launch::new(&[&exe], dir.path());
        launch.ignore = ignore;
        assert_invisible(&launch);
    }
    // A writer into a closed pipe dies of SIGPIPE (status 141) where SIGPIPE is at its default,
    // and gets EPIPE (an error message, status 1) where it is ignored: the same in both runs.
    for ignore in [vec![], vec![libc::SIGPIPE]] {
        let mut launch = Launch::new(
            &[
                "sh",
                "-c",
                "(yes; echo \"yes ended $?\" >&2) | head -c 1 >/dev/null",
            ],
            dir.path(),
        );
        launch.ignore = ignore.clone();
        let pair = assert_invisible(&launch);
        let expected = if ignore.is_empty() {
            "yes ended 141"
        } else {
            "yes ended 1"
        };
        assert!(
            String::from_utf8_lossy(&pair.plain.stderr).contains(expected),
            "{}",
            pair.describe()
        );
    }
}

#[test]
fn closed_standard_descriptors_stay_closed() {
    // Rust's runtime opens /dev/null on a closed 0, 1 or 2 before main; the program must still
    // find them closed.
    let dir = TempDir::new("sigstate-closed");
    let exe = sigstate(&dir);
    let mut launch = Launch::new(&[&exe], dir.path());
    launch.close = vec![0];
    let pair = assert_invisible(&launch);
    assert!(
        String::from_utf8_lossy(&pair.plain.stdout).contains("fd 0: closed"),
        "{}",
        pair.describe()
    );
}

#[test]
fn resource_limits_are_inherited() {
    let dir = TempDir::new("sigstate-limits");
    let exe = sigstate(&dir);
    let mut launch = Launch::new(&[&exe], dir.path());
    launch.nofile = Some(64);
    let pair = assert_invisible(&launch);
    assert!(
        String::from_utf8_lossy(&pair.plain.stdout).contains("limit nofile: 64 "),
        "{}",
        pair.describe()
    );
}

const PYTHON_WAITS_FOR_CTRL_C: &str = "\
import sys, time
try:
    print('ready', flush=True)
    time.sleep(30)
except KeyboardInterrupt:
    print('KeyboardInterrupt', flush=True)
    sys.exit(3)
print('no interrupt', flush=True)
";

#[test]
fn ctrl_c_in_a_terminal_reaches_the_program() {
    let python = python3();
    if !have_tool(&python, &["--version"], "python3") {
        return;
    }
    let dir = TempDir::new("ctrl-c");
    let argv = [python.as_str(), "-c", PYTHON_WAITS_FOR_CTRL_C];
    let limit = Duration::from_secs(30);
    let plain = run_in_terminal(
        plain_command(&argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    let profiled = run_in_terminal(
        profiled_command(&dir.join("p.prof"), &[], &argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    assert_eq!(plain.status.code(), Some(3), "{}", plain.describe());
    assert_eq!(
        profiled.status.into_raw(),
        plain.status.into_raw(),
        "{}",
        profiled.describe()
    );
    assert_eq!(
        String::from_utf8_lossy(&profiled.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
}

#[test]
fn ctrl_c_that_kills_the_program_kills_stallscope_the_same_way() {
    // A shell decides whether to stop a loop from how its child died: by SIGINT, not exit 130.
    let dir = TempDir::new("ctrl-c-kill");
    let argv = ["sh", "-c", "echo ready; exec sleep 30"];
    let limit = Duration::from_secs(30);
    let plain = run_in_terminal(
        plain_command(&argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    let profiled = run_in_terminal(
        profiled_command(&dir.join("p.prof"), &[], &argv, dir.path()),
        "ready\r\n",
        b"\x03",
        limit,
    );
    assert_eq!(plain.status.signal(), Some(libc::SIGINT));
    assert_eq!(
        profiled.status.signal(),
        Some(libc::SIGINT),
        "{}",
        profiled.describe()
    );
}

/// Starts `stallscope run -q -- python3 -c SCRIPT`, waits for "ready" on its stdout, sends `sig`
/// to stallscope's own pid, and returns the outcome.
#[allow(clippy::zombie_processes)] // reaped by waitpid in wait_within
fn signal_stallscope(dir: &TempDir, script: &str, sig: i32) -> Outcome {
    use std::io::BufRead;
    let python = python3();
    let mut c = profiled_command(
        &dir.join("p.prof"),
        &[],
        &[python.as_str(), "-c", script],
        dir.path(),
    );
    let mut child = c
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting stallscope");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert_eq!(first, "ready\n");
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, sig) };
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut lines, &mut rest).unwrap();
    let mut stderr = Vec::new();
    std::io::Read::read_to_end(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let (status, max_rss_kib) =
        wait_within(child.id() as i32, Duration::from_secs(30), "stallscope");
    Outcome {
        status,
        stdout: rest,
        stderr,
        max_rss_kib,
    }
}

#[test]
fn sigint_sent_to_stallscope_is_passed_to_the_program() {
    if !have_tool(&python3(), &["--version"], "python3") {
        return;
    }
    let dir = TempDir::new("kill-int");
    let out = signal_stallscope(&dir, PYTHON_WAITS_FOR_CTRL_C, libc::SIGINT);
    assert_eq!(out.status.code(), Some(3), "{}", out.describe());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "KeyboardInterrupt\n");
}

#[test]
fn sigterm_sent_to_stallscope_ends_the_program_and_stallscope_with_it() {
    if !have_tool(&python3(), &["--version"], "python3") {
        return;
    }
    let dir = TempDir::new("kill-term");
    let out = signal_stallscope(&dir, PYTHON_WAITS_FOR_CTRL_C, libc::SIGTERM);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGTERM),
        "{}",
        out.describe()
    );
    assert!(out.stdout.is_empty(), "{}", out.describe());
}

#[test]
#[allow(clippy::zombie_processes)] // reaped by waitpid in wait_within
fn nohup_keeps_the_program_alive_on_sighup() {
    // Started with SIGHUP ignored, as under nohup: a SIGHUP sent to stallscope is passed on and
    // ignored by the program, which ends normally.
    if !have_tool(&python3(), &["--version"], "python3") {
        return;
    }
    let dir = TempDir::new("nohup");
    let script = "import sys, time\nprint('ready', flush=True)\ntime.sleep(1.5)\nprint('still here', flush=True)\n";
    let python = python3();
    let mut c = profiled_command(
        &dir.join("p.prof"),
        &[],
        &[python.as_str(), "-c", script],
        dir.path(),
    );
    // SAFETY: signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut c, || {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = c
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut lines, &mut rest).unwrap();
    let (status, _) = wait_within(child.id() as i32, Duration::from_secs(30), "stallscope");
    assert_eq!(status.code(), Some(0), "{rest}");
    assert_eq!(rest, "still here\n");
}

#[test]
fn a_program_killed_by_a_signal_leaves_the_same_wait_status() {
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGKILL, "KILL"),
        (libc::SIGUSR1, "USR1"),
    ] {
        let dir = TempDir::new("killed-status");
        let pair = assert_invisible(&Launch::new(
            &[
                "sh",
                "-c",
                &format!("echo before; kill -{name} $$; echo after"),
            ],
            dir.path(),
        ));
        assert_eq!(pair.plain.status.signal(), Some(sig), "{}", pair.describe());
    }
}

/// The environment lists `environ_dump` printed: (environ, /proc/self/environ).
fn environment_lists(stdout: &[u8]) -> (Vec<String>, Vec<String>) {
    let text = String::from_utf8_lossy(stdout);
    let mut lists = (Vec::new(), Vec::new());
    let mut second = false;
    for line in text.lines() {
        match line {
            "== environ" => second = false,
            "== /proc/self/environ" => second = true,
            _ if second => lists.1.push(line.to_string()),
            _ => lists.0.push(line.to_string()),
        }
    }
    lists
}

/// The variables `stallscope run` adds with default options: the preload, and what the
/// interposer needs to find the supervisor, the run's index and the profile paths.
const ADDED_BY_DEFAULT: [&str; 5] = [
    "LD_PRELOAD",
    "STALLSCOPE_SUPERVISOR",
    "STALLSCOPE_INDEX",
    "STALLSCOPE_OUTPUT",
    "STALLSCOPE_DIR",
];

fn key(entry: &str) -> &str {
    entry.split('=').next().unwrap_or(entry)
}

#[test]
fn the_environment_is_the_users_in_order_plus_the_preload_and_a_few_variables() {
    let dir = TempDir::new("environ");
    let exe = hostile_program(dir.path(), "environ_dump.c", &[]);
    // A stale STALLSCOPE_ setting in the user's environment is not passed on either.
    let launch = Launch::new(&[&exe], dir.path())
        .env("ZZ_FIRST", "1")
        .env("STALLSCOPE_SAMPLE_HZ", "7")
        .env("AA_LAST", "two words");
    let pair = run_both(&launch);
    assert_eq!(pair.profiled.status.code(), Some(0), "{}", pair.describe());
    let (plain, _) = environment_lists(&pair.plain.stdout);
    let (profiled, kernel) = environment_lists(&pair.profiled.stdout);
    let without_ours: Vec<&String> = profiled
        .iter()
        .filter(|e| !ADDED_BY_DEFAULT.contains(&key(e)))
        .collect();
    let plain_without_stale: Vec<&String> = plain
        .iter()
        .filter(|e| key(e) != "STALLSCOPE_SAMPLE_HZ")
        .collect();
    assert_eq!(
        without_ours, plain_without_stale,
        "the user's variables, in the same order"
    );
    // The kernel's copy (/proc/self/environ) still holds what `run` passed: with default options
    // only these; environ is that copy without the run's settings, which the interposer took out.
    let ours: Vec<&str> = kernel
        .iter()
        .map(|e| key(e))
        .filter(|k| k.starts_with("STALLSCOPE_"))
        .collect();
    assert!(
        ours.iter().all(|k| ADDED_BY_DEFAULT.contains(k)),
        "with default options only {ADDED_BY_DEFAULT:?}: {ours:?}"
    );
    assert!(!ours.is_empty(), "run passes its settings: {kernel:?}");
    let kernel_without_ours: Vec<&String> = kernel
        .iter()
        .filter(|e| !key(e).starts_with("STALLSCOPE_"))
        .collect();
    assert_eq!(
        kernel_without_ours,
        profiled.iter().collect::<Vec<_>>(),
        "environ is what the kernel passed, less the run's settings"
    );
}

#[test]
fn the_program_sees_no_variable_of_stallscope() {
    let dir = TempDir::new("environ-strict");
    let exe = hostile_program(dir.path(), "environ_dump.c", &[]);
    // STALLSCOPE_THREADS is the program's (bench --threads sets it for programs that read it).
    let launch = Launch::new(&[&exe], dir.path()).env("STALLSCOPE_THREADS", "3");
    let pair = run_both(&launch);
    assert!(
        String::from_utf8_lossy(&pair.plain.stdout).contains("STALLSCOPE_THREADS=3\n"),
        "{}",
        pair.describe()
    );
    // environ only: /proc/self/environ is what exec passed, which no one can change afterwards.
    let (plain, _) = environment_lists(&pair.plain.stdout);
    let (profiled, _) = environment_lists(&pair.profiled.stdout);
    let profiled: Vec<String> = profiled
        .into_iter()
        .filter(|e| key(e) != "LD_PRELOAD")
        .collect();
    assert_eq!(profiled, plain, "{}", pair.describe());
}

/// The comparison switches (`STALLSCOPE_LOCK_STEPS`, `STALLSCOPE_FAST_UNWIND`) are in the
/// options table like every setting: set in `run`'s environment, they reach the interposer (the
/// profile says the lock steps were off) and leave the program's environment (the interposer
/// never reads them with getenv).
#[test]
fn the_comparison_switches_reach_the_interposer_and_leave_the_programs_environment() {
    let dir = TempDir::new("environ-switches");
    let exe = hostile_program(dir.path(), "environ_dump.c", &[]);
    let switches = ["STALLSCOPE_LOCK_STEPS", "STALLSCOPE_FAST_UNWIND"];
    let launch = Launch::new(&[&exe], dir.path())
        .env(switches[0], "0")
        .env(switches[1], "0");
    let pair = run_both(&launch);
    assert_eq!(pair.profiled.status.code(), Some(0), "{}", pair.describe());
    let (plain, _) = environment_lists(&pair.plain.stdout);
    let (profiled, kernel) = environment_lists(&pair.profiled.stdout);
    for var in switches {
        let set = format!("{var}=0");
        assert!(plain.contains(&set), "{}", pair.describe());
        assert!(kernel.contains(&set), "run passes it on: {kernel:?}");
        assert!(
            !profiled.iter().any(|e| key(e) == var),
            "the program sees {var}: {profiled:?}"
        );
    }
    let report = report_json(&pair.profile);
    assert_eq!(
        report["lock_steps"]["mutex"], false,
        "{}",
        report["lock_steps"]
    );
    assert_eq!(report["lock_steps"]["rwlock_read"], false);
}

#[test]
fn programs_started_every_way_are_profiled_and_see_no_setting() {
    // execve, execvp, posix_spawn, system() and popen() (the last two spawn a shell from inside
    // glibc): the child sees no STALLSCOPE_ variable but the parent's own changes, and is
    // profiled into the run's directory; an environment built without LD_PRELOAD stays without
    // the preload and the settings.
    let dir = TempDir::new("spawn-ways");
    let exe = hostile_program(dir.path(), "spawn_ways.c", &[]);
    let launch = Launch::new(&[&exe], dir.path()).env("SPAWN_WAYS_GONE", "1");
    let pair = assert_invisible(&launch);
    let out = String::from_utf8_lossy(&pair.plain.stdout);
    let ways = ["execve", "execvp", "posix_spawn", "system", "popen"];
    for way in ways {
        assert!(
            out.contains(&format!(
                "{way}: 0 STALLSCOPE_ variables, 2 of the parent's own\n"
            )),
            "{}",
            pair.describe()
        );
    }
    assert!(
        out.contains("cleared: 0 STALLSCOPE_ variables, 1 of the parent's own\n"),
        "{}",
        pair.describe()
    );
    let profiled: Vec<String> = run_files(pair.profile.parent().unwrap())
        .iter()
        .filter(|f| **f != pair.profile)
        .filter_map(|f| command_of(&report_json(f)).get(1).cloned())
        .collect();
    for way in ways {
        assert!(
            profiled.iter().any(|w| w == way),
            "a profile of the child started by {way}: {profiled:?}"
        );
    }
    assert!(
        !profiled.iter().any(|w| w == "cleared"),
        "an environment without the preload is not profiled: {profiled:?}"
    );
}
