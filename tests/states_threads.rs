//! Thread states (docs/STATES.md): real programs whose threads wait on glibc-internal locks,
//! pthread mutexes, contended atomics, sleeps and condition variables, each run under
//! `stallscope run`; the report must say which, and name the function.
//!
//! The programs measure contention between two running threads, so the tests take turns: two
//! of them at once on a two-core machine would mostly measure each other.

mod common;

use common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn state_program(dir: &TempDir, name: &str) -> PathBuf {
    let src = test_source("state_programs", name);
    compile_file(dir.path(), &src, &["-g"])
}

fn run_and_report(name: &str, run_args: &[&str]) -> (TempDir, String, Value) {
    let dir = TempDir::new("states");
    let exe = state_program(&dir, name);
    let (out, path) = profile(dir.path(), "p.prof", run_args, &[&exe], 0);
    let report = report_json(&path);
    (
        dir,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        report,
    )
}

/// The program's threads other than main (the workers).
fn workers(report: &Value) -> Vec<&Value> {
    report["threads"]
        .as_array()
        .expect("threads")
        .iter()
        .filter(|t| t["main"] == false)
        .collect()
}

fn state_ns(t: &Value, key: &str) -> f64 {
    t["states"][format!("{key}_ns")]
        .as_f64()
        .unwrap_or_else(|| panic!("no states.{key}_ns in {t}"))
}

/// The share of `keys` in the sampled time of `threads` (sampled time: every category summed).
fn share(threads: &[&Value], keys: &[&str]) -> f64 {
    let all = [
        "compute",
        "allocator",
        "lock",
        "atomic",
        "io",
        "blocked",
        "kernel_memory",
    ];
    let total: f64 = threads
        .iter()
        .map(|t| all.iter().map(|k| state_ns(t, k)).sum::<f64>())
        .sum();
    let part: f64 = threads
        .iter()
        .map(|t| keys.iter().map(|k| state_ns(t, k)).sum::<f64>())
        .sum();
    assert!(total > 0.0, "no sampled time at all");
    part / total
}

/// The top `category` site over the given threads, by time.
fn top_site<'a>(threads: &[&'a Value], category: &str) -> Option<&'a Value> {
    threads
        .iter()
        .flat_map(|t| t["state_sites"][category].as_array().into_iter().flatten())
        .max_by(|a, b| a["ns"].as_u64().cmp(&b["ns"].as_u64()))
}

/// Two threads contend only when they run at the same time: a run in which other processes
/// kept them off the CPUs (`starved`) says so and the test skips its contention assertions.
fn starved_run(report: &Value, what: &str) -> bool {
    match starved(report, 0.15) {
        Some(why) => {
            eprintln!("SKIPPED ({what}): {why}");
            println!("SKIPPED ({what}): {why}");
            true
        }
        None => false,
    }
}

#[test]
fn random_in_two_threads_waits_on_its_internal_lock() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, stdout, report) = run_and_report("random_fight.c", &[]);
    assert_eq!(stdout, "done\n");
    let w = workers(&report);
    assert_eq!(w.len(), 2);
    if starved_run(&report, "random()'s lock") {
        return;
    }
    let lock = share(&w, &["lock"]);
    assert!(
        lock >= 0.15,
        "lock share {lock:.3} of the workers' time:\n{report:#}"
    );
    let site = top_site(&w, "lock").expect("a lock site");
    assert_eq!(site["function"], "random", "{site:#}");
    let user = site["user_frame"].as_str().unwrap_or_default();
    assert!(user.contains("roll"), "user frame {user}");
    assert!(share(&w, &["allocator"]) < 0.05);
    // The lock is named: random.c's static `lock` in libc's debug symbols, by the lock word of
    // the atomic instruction or the futex call the samples caught.
    assert_eq!(
        named_lock(site),
        Some(("random()'s lock", "symbol")),
        "{site:#}"
    );
}

/// The name of the lock a lock site's samples caught most, and how it was named.
fn named_lock(site: &Value) -> Option<(&str, &str)> {
    let lock = site["locks"].as_array()?.first()?;
    Some((lock["name"].as_str()?, lock["named_by"].as_str()?))
}

/// The locks the lock sites of `threads` caught, with how each was named: at least one when
/// the sites have `min_samples` samples or more (a sample at an inlined lock's atomic
/// instruction on a register-held address, say stdio's, names no lock; a thin run may have
/// only those).
fn caught_locks<'a>(threads: &[&'a Value], min_samples: u64) -> Vec<(&'a str, &'a str)> {
    let sites: Vec<&Value> = threads
        .iter()
        .flat_map(|t| t["state_sites"]["lock"].as_array().into_iter().flatten())
        .collect();
    let samples: u64 = sites.iter().filter_map(|s| s["samples"].as_u64()).sum();
    let caught: Vec<(&str, &str)> = sites.iter().filter_map(|s| named_lock(s)).collect();
    assert!(
        !caught.is_empty() || samples < min_samples,
        "no lock site caught its lock in {samples} samples: {sites:#?}"
    );
    caught
}

#[test]
fn printf_from_two_threads_waits_on_the_lock_of_stdout() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("states");
    let exe = state_program(&dir, "stdout_fight.c");
    let (out, path) = profile(dir.path(), "p.prof", &[], &[&exe], 0);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("done\n"));
    let report = report_json(&path);
    let w = workers(&report);
    if starved_run(&report, "the lock of stdout") {
        return;
    }
    let site = top_site(&w, "lock").expect("a lock site");
    let function = site["function"].as_str().unwrap_or_default();
    assert!(function.contains("printf"), "{site:#}");
    assert!(
        site["user_frame"]
            .as_str()
            .unwrap_or_default()
            .contains("printer"),
        "{site:#}"
    );
    for lock in caught_locks(&w, 1) {
        assert_eq!(lock, ("the lock of stdout", "symbol"));
    }
}

#[test]
fn fprintf_to_one_file_waits_on_the_file_lock() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, stdout, report) = run_and_report("shared_file.c", &[]);
    assert_eq!(stdout, "done\n");
    let w = workers(&report);
    if starved_run(&report, "the lock of a FILE") {
        return;
    }
    let lock = share(&w, &["lock"]);
    assert!(lock >= 0.05, "lock share {lock:.3}:\n{report:#}");
    let site = top_site(&w, "lock").expect("a lock site");
    let function = site["function"].as_str().unwrap_or_default();
    assert!(
        function.contains("printf") || function.starts_with("_IO_"),
        "the lock is taken inside {function}"
    );
    assert!(
        site["user_frame"]
            .as_str()
            .unwrap_or_default()
            .contains("writer")
    );
    // A FILE from fopen lives on the heap: named as a FILE's lock, with its address.
    for (name, how) in caught_locks(&w, 20) {
        assert!(name.starts_with("the lock of a FILE (at 0x"), "{name}");
        assert_eq!(how, "stdio");
    }
}

#[test]
fn a_fought_over_mutex_is_lock_time_in_pthread_mutex_lock() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, _, report) = run_and_report("mutex_fight.c", &[]);
    let w = workers(&report);
    let lock = share(&w, &["lock"]);
    assert!(lock >= 0.10, "lock share {lock:.3}:\n{report:#}");
    let site = top_site(&w, "lock").expect("a lock site");
    assert!(
        site["function"]
            .as_str()
            .unwrap_or_default()
            .starts_with("pthread_mutex_"),
        "{site:#}"
    );
    assert!(
        site["user_frame"]
            .as_str()
            .unwrap_or_default()
            .contains("fight")
    );
}

#[test]
fn a_compute_loop_is_compute() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, _, report) = run_and_report("compute_only.c", &[]);
    let w = workers(&report);
    let other = share(&w, &["lock", "allocator", "atomic", "io", "kernel_memory"]);
    assert!(other < 0.03, "non-compute share {other:.3}:\n{report:#}");
    assert!(share(&w, &["compute"]) > 0.95);
    let hot = report["hot"].as_array().expect("hot");
    assert_eq!(hot[0]["function"], "spin", "{:#}", report["hot"]);
    assert_eq!(hot[0]["category"], "compute");
    let efficiency = report["parallel_efficiency"]["value"].as_f64().unwrap();
    assert!(efficiency > 0.0 && efficiency <= 1.0);
}

#[test]
fn sleeping_and_condition_waits_are_blocked_not_lock() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, stdout, report) = run_and_report("sleepers.c", &[]);
    assert_eq!(stdout, "done\n");
    for t in workers(&report) {
        let blocked = share(&[t], &["blocked"]);
        let lock = share(&[t], &["lock"]);
        assert!(
            blocked > 0.9,
            "thread {}: blocked {blocked:.3}\n{t:#}",
            t["tid"]
        );
        assert!(lock < 0.05, "thread {}: lock {lock:.3}", t["tid"]);
        // 0.4 s of sleep at 100 wall samples a second.
        assert!(t["states"]["samples"].as_u64().unwrap() >= 10, "{t:#}");
    }
}

#[test]
fn contended_shared_ptr_copies_show_as_atomic() {
    if !common::have_cxx() {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, _, report) = run_and_report("shared_ptr_copy.cpp", &[]);
    let w = workers(&report);
    let atomic = share(&w, &["atomic"]);
    assert!(atomic >= 0.05, "atomic share {atomic:.3}:\n{report:#}");
    assert!(share(&w, &["lock"]) < 0.05);
    let site = top_site(&w, "atomic").expect("an atomic site");
    assert!(
        site["user_frame"]
            .as_str()
            .unwrap_or_default()
            .contains("copy_loop"),
        "{site:#}"
    );
}

#[test]
fn a_program_with_its_own_sigprof_handler_keeps_it_and_sampling_steps_aside() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("states");
    let exe = state_program(&dir, "own_sigprof.c");
    let plain = plain_run(dir.path(), &[&exe], |_| {});
    let (out, path) = profile(dir.path(), "p.prof", &[], &[&exe], 0);
    assert_eq!(out.stdout, plain.stdout);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "own handler still installed: yes\nticks > 10: yes\n"
    );
    let report = report_json(&path);
    let sampling = &report["sampling"];
    assert_eq!(sampling["moved_from"], "SIGPROF", "{sampling:#}");
    assert!(
        sampling["signal"]
            .as_str()
            .unwrap()
            .starts_with("SIGRTMIN+")
    );
    assert!(sampling["note"].as_str().unwrap().contains("stepped aside"));
    assert!(sampling["cpu_samples"].as_u64().unwrap() > 0);
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("stepped aside to SIGRTMIN+"));
}

#[test]
fn a_signal_heavy_program_behaves_the_same() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("states");
    let exe = state_program(&dir, "signal_storm.c");
    let plain = plain_run(dir.path(), &[&exe], |_| {});
    let (out, path) = profile(dir.path(), "p.prof", &[], &[&exe], 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "sent 2000, sleep rc 0\nreceived some: yes\n"
    );
    let report = report_json(&path);
    assert_eq!(report["sampling"]["signal"], "SIGPROF");
    assert!(report["sampling"]["cpu_samples"].as_u64().unwrap() > 0);
}

#[test]
fn the_timeline_covers_every_thread_and_no_sampling_means_no_states() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, _, report) = run_and_report("sleepers.c", &[]);
    let timeline = &report["timeline"];
    let threads = timeline["threads"].as_array().expect("timeline threads");
    assert_eq!(threads.len(), report["threads"].as_array().unwrap().len());
    let wall = report["wall_ns"].as_u64().unwrap();
    let slice = timeline["slice_ns"].as_u64().unwrap();
    for t in threads {
        let slices = t["slices"].as_array().unwrap();
        assert_eq!(slices.len(), 100);
        assert!(
            slice * 100 >= wall / 10 * 9,
            "{slice} x 100 slices for {wall} ns"
        );
        for s in slices {
            let total: f64 = s
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!(total <= 1.0001, "{s}");
        }
        // The sleeping threads are blocked in most slices of their life.
        let blocked = slices.iter().filter(|s| s.get("blocked").is_some()).count();
        assert!(blocked >= 50, "{t}");
    }

    let (_dir, _, report) = run_and_report("sleepers.c", &["--no-sampling"]);
    assert_eq!(report["sampling"]["enabled"], false);
    assert!(report.get("timeline").is_none());
    assert!(report["threads"][0].get("states").is_none());
}

#[test]
fn chrome_export_and_diff_carry_the_states() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (dir, _, _) = run_and_report("mutex_fight.c", &[]);
    let before = dir.join("p.prof");
    let exe = state_program(&dir, "compute_only.c");
    let (_, after) = profile(dir.path(), "after.prof", &[], &[&exe], 0);

    let out = std::process::Command::new(stallscope())
        .args(["export", "--format", "chrome"])
        .arg(&before)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let trace: Value = serde_json::from_slice(&out.stdout).unwrap();
    let states: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "state")
        .collect();
    assert!(states.iter().any(|e| e["name"] == "lock"), "{states:?}");
    for e in &states {
        assert_eq!(e["ph"], "X");
        assert!(e["dur"].as_f64().unwrap() > 0.0);
    }

    // The HTML timeline draws the real samples: lock stretches of the fighting threads.
    let page = dir.join("p.html");
    let out = std::process::Command::new(stallscope())
        .args(["html", "-o"])
        .arg(&page)
        .arg(&before)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(r#"class="c-lock""#) && html.contains(r#"class="c-compute""#));
    assert!(html.contains("parallel efficiency") && html.contains("Hottest functions"));

    let out = std::process::Command::new(stallscope())
        .args(["diff", "--json"])
        .arg(&before)
        .arg(&after)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let diff: Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = &diff["threads"]["all"];
    assert!(
        all["before"]["states"]["lock"].as_f64().unwrap() > 0.02,
        "{all:#}"
    );
    assert!(
        all["after"]["states"]["lock"].as_f64().unwrap() < 0.01,
        "{all:#}"
    );
    let text = std::process::Command::new(stallscope())
        .arg("diff")
        .arg(&before)
        .arg(&after)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Thread states, sampled"));
}

#[test]
fn a_sigprof_the_program_does_not_handle_still_ends_it() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("states");
    let exe = state_program(&dir, "prof_default.c");
    let plain = plain_run(dir.path(), &[&exe], |_| {});
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(plain.status.signal(), Some(27), "{}", describe(&plain));
    let out = stallscope_run(dir.path(), &["-q", "-o", "p.prof"], &[&exe]);
    assert_eq!(shell_status(&out), 128 + 27, "{}", describe(&out));
    assert_eq!(out.stdout, plain.stdout);
}
