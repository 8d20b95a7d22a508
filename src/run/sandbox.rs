//! `stallscope run` inside a seccomp sandbox made by someone else (a systemd unit's
//! `SystemCallFilter=`, a sandbox launcher): the filter is in place before the program starts and
//! may kill it for a system call only the interposer makes (a CPU timer, `unshare`, a thread's CPU
//! clock). stallscope runs under the same filter, so before it launches the program it loads the
//! interposer into a probe process of its own (STALLSCOPE_PROBE, preload/sandbox.c), which makes
//! each of those calls once and names it first. A probe the filter kills names the call, and the
//! program then runs unprofiled, as without stallscope.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the probe may take (it makes a few dozen calls): past this it is taken as refused.
const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// Why the program must run unprofiled, when stallscope itself runs under a seccomp filter that
/// the interposer's own calls do not pass (None: no filter, or the probe passed).
pub fn refusal(library: &Path) -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mode = crate::attach::status_field(&status, "Seccomp")?;
    if mode == "0" {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let mut probe = Command::new(exe)
        .arg("--version")
        .env("LD_PRELOAD", library)
        .env(crate::options::PROBE.env, "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut said = String::new();
    let mut out = probe.stdout.take()?;
    let started = Instant::now();
    let status = loop {
        match probe.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if started.elapsed() < PROBE_LIMIT => {
                std::thread::sleep(Duration::from_millis(2))
            }
            _ => {
                let _ = probe.kill();
                let _ = probe.wait();
                break None;
            }
        }
    };
    let _ = out.read_to_string(&mut said);
    verdict(
        mode,
        &said,
        status.map(|s| {
            use std::os::unix::process::ExitStatusExt;
            s.signal()
        }),
    )
}

/// The probe's verdict from its lines (the calls it made, in order, then `ok`) and the signal
/// that ended it, if one did (`None` for the status: it did not end in time).
fn verdict(mode: &str, said: &str, ended_by: Option<Option<i32>>) -> Option<String> {
    let under = if mode == "1" {
        "in seccomp's strict mode".to_string()
    } else {
        format!("under a seccomp filter (Seccomp: {mode} in /proc/self/status)")
    };
    let last = said.lines().last().unwrap_or("");
    if let Some(call) = said.lines().find_map(|l| l.strip_suffix('!')) {
        return Some(format!(
            "stallscope runs {under} that refuses `{call}`, which the interposer needs to wait"
        ));
    }
    match ended_by {
        // Ended by itself: through the probe (`ok`), or without it (no interposer was loaded
        // there); either way nothing tells of a refusal.
        Some(None) => None,
        Some(Some(sig)) => Some(if last.is_empty() {
            format!(
                "stallscope runs {under} that kills a process (signal {sig}) for a system call the interposer makes as it starts"
            )
        } else {
            format!(
                "stallscope runs {under} that kills a process (signal {sig}) for `{last}`, a system call the interposer makes"
            )
        }),
        None => Some(format!(
            "stallscope runs {under}, and the interposer's trial of its system calls under it did not end"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::verdict;

    #[test]
    fn the_probe_names_the_call_the_filter_killed() {
        assert_eq!(
            verdict("2", "getppid\nclock_gettime\nok\n", Some(None)),
            None
        );
        let why = verdict(
            "2",
            "getppid\nclock_gettime\ntimer_create\n",
            Some(Some(31)),
        )
        .unwrap();
        assert!(
            why.contains("kills a process (signal 31) for `timer_create`"),
            "{why}"
        );
        assert!(why.contains("Seccomp: 2"), "{why}");
        let why = verdict("2", "", Some(Some(31))).unwrap();
        assert!(why.contains("as it starts"), "{why}");
        let why = verdict("2", "futex\nfutex!\nnanosleep\nok\n", Some(None)).unwrap();
        assert!(why.contains("refuses `futex`"), "{why}");
        let why = verdict("1", "getppid\n", Some(Some(9))).unwrap();
        assert!(why.contains("strict mode"), "{why}");
        assert!(
            verdict("2", "getppid\n", None)
                .unwrap()
                .contains("did not end")
        );
    }
}
