//! `run --push` over a process tree: the program and every process it starts (a server's forked
//! workers, a postmaster's backends) recorded in windows of their own and pushed, each profile
//! labelled with its own pid, as a `run` without `--push` writes a profile per process. The
//! program's processes run paused and listen for windows (a fork child once it lives on past its
//! first 100 ms and makes a call the interposer sees); this loop looks for new descendants of the
//! program every [`LOOK`] and gives each a [`windows::record`] loop on a thread of its own. When
//! the program ends, the descendants still running have their open window closed and pushed, and
//! recording stops: the supervisor waits for no process the user did not start.
use super::windows;
use crate::export::push::Target;
use crate::export::push::queue::Outcome;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the tree is looked at for new processes.
const LOOK: Duration = Duration::from_millis(100);

type Recording = JoinHandle<std::result::Result<Outcome, String>>;

/// Records `root` and its descendants in windows of `every` until `root` ends; the outcome of all.
pub fn record(
    root: u32,
    every: Duration,
    target: Target,
    quiet: bool,
) -> std::result::Result<Outcome, String> {
    let halt = Arc::new(AtomicBool::new(false));
    let root_target = target.clone();
    let main = std::thread::Builder::new()
        .name("stallscope-windows".into())
        .spawn(move || windows::record(root, None, every, None, root_target, true, quiet, None))
        .map_err(|e| format!("cannot start the windows' thread: {e}"))?;
    // A process is known by its pid and its start time: a pid the kernel gives again later is
    // another process. Those gone are forgotten, so a server that runs for days keeps none.
    let mut seen: HashSet<(u32, u64)> = HashSet::new();
    let mut running: Vec<Recording> = Vec::new();
    let mut outcome = Outcome::default();
    while !main.is_finished() {
        for pid in descendants(root) {
            let Some(started) = start_time(pid) else {
                continue;
            };
            if !seen.insert((pid, started)) {
                continue;
            }
            let (target, halt) = (target.clone(), Arc::clone(&halt));
            // A process whose windows cannot be recorded (no thread to spare) is left unrecorded.
            if let Ok(h) = std::thread::Builder::new()
                .name("stallscope-windows".into())
                .spawn(move || {
                    windows::record(pid, None, every, None, target, true, true, Some(&halt))
                })
            {
                running.push(h);
            }
        }
        let (done, going): (Vec<_>, Vec<_>) = running.into_iter().partition(|h| h.is_finished());
        running = going;
        for h in done {
            if let Ok(Ok(o)) = h.join() {
                add(&mut outcome, o);
            }
        }
        seen.retain(|&(pid, started)| start_time(pid) == Some(started));
        std::thread::sleep(LOOK);
    }
    halt.store(true, Ordering::SeqCst);
    let root_outcome = main
        .join()
        .unwrap_or_else(|_| Err("the windows' thread failed".into()));
    for h in running {
        if let Ok(Ok(o)) = h.join() {
            add(&mut outcome, o);
        }
    }
    match root_outcome {
        Ok(o) => {
            add(&mut outcome, o);
            Ok(outcome)
        }
        Err(e) if outcome.pushed == 0 && outcome.lost == 0 => Err(e),
        Err(e) => {
            if !quiet {
                eprintln!("stallscope: {e}");
            }
            Ok(outcome)
        }
    }
}

/// When the process started (clock ticks after boot, /proc/PID/stat's 22nd field); None once
/// it is gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn add(into: &mut Outcome, o: Outcome) {
    into.pushed += o.pushed;
    into.lost += o.lost;
    into.unread += o.unread;
    if into.first_error.is_none() {
        into.first_error = o.first_error;
    }
}

/// The processes below `root` now (children of any of their threads, at any depth).
fn descendants(root: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if !out.contains(&child) {
                    out.push(child);
                    todo.push(child);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_process_is_found_below_this_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = descendants(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&child.id()), "{found:?}");
    }
}
