//! The program's threads under `stallscope run` behave as without it: a signal sent to
//! a thread as soon as it exists, threads created by the ten thousand, threads that block every
//! signal. Each test runs a hostile program from tests/hostile_programs/ with and without the
//! profiler and compares how it ends and what it prints.

mod common;
#[path = "hostile_programs/support.rs"]
mod support;

use common::*;
use support::*;

/// A handler that allocates, run in a new thread before the thread's own code: the thread must
/// get one record and one CPU timer, and the process must not die of SIGPROF (it did, 10 of 10).
#[test]
fn a_signal_at_thread_start_with_an_allocating_handler_is_harmless() {
    let dir = TempDir::new("inv-sigstart");
    let exe = hostile(dir.path(), "signal_new_thread");
    for round in 0..3 {
        let (out, prof) = same_as_plain(
            dir.path(),
            &format!("run{round}.prof"),
            &[],
            &[exe.to_str().unwrap(), "30"],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "handled 30 of 30\n",
            "{}",
            describe(&out)
        );
        let report = report_json(&prof);
        let threads = report["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 31, "one record per thread: {threads:?}");
    }
}

/// The peak resident set the program reports on stderr ("peak rss N kB").
fn peak_rss_kb(out: &std::process::Output) -> u64 {
    let stderr = String::from_utf8_lossy(&out.stderr);
    stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("peak rss ")?
                .strip_suffix(" kB")?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no peak rss line\n{}", describe(out)))
}

/// Memory and profile grow with the threads alive, not with every thread ever created: 20,000
/// short threads (two at a time) cost about what 2,000 do (before: 222 MB of RSS and a 57-114 MB
/// profile for 20,000), and every thread and call is still counted.
#[test]
fn twenty_thousand_short_threads_cost_what_two_thousand_do() {
    let dir = TempDir::new("inv-threads");
    let exe = hostile(dir.path(), "many_threads");
    let exe = exe.to_str().unwrap();
    let (small_out, small) = same_as_plain(dir.path(), "small.prof", &[], &[exe, "2000"]);
    let (big_out, big) = same_as_plain(dir.path(), "big.prof", &[], &[exe, "20000"]);
    let (small_rss, big_rss) = (peak_rss_kb(&small_out), peak_rss_kb(&big_out));
    assert!(
        big_rss < small_rss + 8 * 1024,
        "peak RSS {big_rss} kB for 20,000 threads, {small_rss} kB for 2,000"
    );
    let size = std::fs::metadata(&big).unwrap().len();
    assert!(
        size < 2 << 20,
        "a profile of {size} bytes for 20,000 threads"
    );
    for (path, n) in [(&small, 2000u64), (&big, 20000)] {
        let report = report_json(path);
        let threads = report["threads"].as_array().unwrap();
        let counted: u64 = threads
            .iter()
            .map(|t| t["folded_threads"].as_u64().unwrap_or(1))
            .sum();
        assert_eq!(counted, n + 1, "every thread is counted, folded or not");
        assert!(threads.len() < 400, "{} thread records", threads.len());
        assert!(
            threads
                .iter()
                .any(|t| t["folded_threads"].as_u64() > Some(1000)),
            "the short threads are folded into a group"
        );
        // Each worker makes one malloc (and frees the previous worker's block) under the mutex.
        assert!(fn_stats(&report, "malloc").calls >= n, "{path:?}");
        let lock = report["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["acquisitions"].as_u64() == Some(n));
        assert!(lock.is_some(), "the workers' mutex, acquired {n} times");
        // Counts of distinct threads survive folding: a lock taken by every worker counts them all,
        // not the few thread records left after folding.
        assert_eq!(
            lock.unwrap()["threads"].as_u64(),
            Some(n),
            "every worker took the mutex once"
        );
        assert_eq!(num(&report, &["thread_count"]), n + 1, "every thread ran");
        let allocating = num(&report, &["alloc", "threads"]);
        assert!(
            allocating > n && allocating <= n + 1,
            "every worker allocated (and the main thread may): {allocating}"
        );
    }
    // The text report says what was folded.
    let out = std::process::Command::new(stallscope())
        .args(["report"])
        .arg(&big)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("many_threads ×")
            && text.contains("(folded): short threads folded into one row"),
        "{text}"
    );
}

/// Workers that block every signal (as xz's do) get no CPU sample; their running time is taken
/// from the kernel's CPU clock instead, the report says so per thread, and parallel efficiency
/// counts it (it said 0.0% for two busy workers before). Their masks are left as they are.
#[test]
fn threads_that_block_every_signal_are_still_accounted_for() {
    let dir = TempDir::new("inv-blocked");
    let exe = hostile(dir.path(), "blocked_workers");
    let (out, prof) = same_as_plain(
        dir.path(),
        "blocked.prof",
        &[],
        &[exe.to_str().unwrap(), "0.5"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "workers done\n");
    let report = report_json(&prof);
    let threads = report["threads"].as_array().unwrap();
    let workers: Vec<&serde_json::Value> = threads.iter().filter(|t| t["main"] == false).collect();
    assert_eq!(workers.len(), 2, "{threads:?}");
    for w in &workers {
        assert_eq!(w["sampling"], "kernel-clock", "{w:#}");
        let cpu = num(w, &["cpu_ns"]);
        let compute = num(w, &["states", "compute_ns"]);
        // It spins for 0.5 s of wall time; on a loaded machine it may get a tenth of that.
        assert!(cpu > 10_000_000, "the worker ran: {w:#}");
        assert!(
            compute * 10 >= cpu * 7 && compute <= cpu + 20_000_000,
            "its CPU time ({cpu} ns) is its compute time ({compute} ns): {w:#}"
        );
    }
    let main = threads.iter().find(|t| t["main"] == true).unwrap();
    assert_eq!(main["sampling"], "signal", "main does not block the signal");
    // Efficiency counts the workers' kernel-clock time (it said 0.0% before). Their share of the
    // wall time depends on the machine's load, so the test checks the sum, not a level.
    let efficiency = &report["parallel_efficiency"];
    let workers_compute: u64 = workers
        .iter()
        .map(|w| num(w, &["states", "compute_ns"]))
        .sum();
    assert!(
        num(efficiency, &["compute_ns"]) >= workers_compute,
        "{efficiency:#}"
    );
    assert!(
        efficiency["value"].as_f64().unwrap() > 0.0,
        "{efficiency:#}"
    );
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&prof)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("blocks the sampling signal"), "{text}");
}

/// A single-threaded program stays single-threaded in glibc's eyes although the flusher runs
/// (preload/single.c): `__libc_single_threaded`, which libstdc++ reads to pick plain or atomic
/// reference counts and glibc to skip malloc's and mutexes' locking, reads as without stallscope
/// at start, after a periodic flush, in a fork child and after the program's own first thread.
/// CPU samples in a library loaded meanwhile (the flusher scans the loaded objects only at the
/// end then) still resolve to it. With STALLSCOPE_KEEP_SINGLE=0 the flag reads 0 from the start,
/// as it did before: the check can fail.
#[test]
fn a_single_threaded_program_stays_single_threaded_for_glibc() {
    let dir = TempDir::new("inv-single");
    let exe = hostile(dir.path(), "single_threaded_flag");
    let (out, prof) = same_as_plain(dir.path(), "single.prof", &[], &[exe.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "start 1\nafter dlopen 1\nchild 1\nafter a thread 0\n",
        "{}",
        describe(&out)
    );
    let report = report_json(&prof);
    let in_libm: u64 = report["hot"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| {
            h["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["module"].as_str().is_some_and(|m| m.contains("/libm.so")))
        })
        .map(|h| h["samples"].as_u64().unwrap())
        .sum();
    assert!(
        in_libm >= 5,
        "0.3 s computing in libm: its samples resolve to it ({in_libm}): {:#}",
        report["hot"]
    );

    let forced = stallscope_run_with(
        dir.path(),
        &["-o", dir.join("multi.prof").to_str().unwrap()],
        &[exe.to_str().unwrap()],
        |c| {
            c.env("STALLSCOPE_KEEP_SINGLE", "0");
        },
    );
    assert!(
        String::from_utf8_lossy(&forced.stdout).starts_with("start 0\n"),
        "{}",
        describe(&forced)
    );
}

/// A program run at real-time priority keeps its policy in every thread of its own, and the
/// flusher leaves it as it starts: at the program's SCHED_FIFO priority it held a CPU that
/// the program's woken threads waited for (docs/PERFORMANCE.md, "Faithfulness: the sampler").
#[test]
fn a_realtime_program_keeps_its_policy_and_the_flusher_leaves_it() {
    let dir = TempDir::new("inv-realtime");
    let exe = hostile(dir.path(), "realtime_threads");
    let (out, _) = same_as_plain(dir.path(), "rt.prof", &[], &[exe.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if stdout == "no realtime\n" {
        eprintln!("skipped: no real-time priority here (needs root or CAP_SYS_NICE)");
        return;
    }
    assert_eq!(stdout, "main 1 worker 1\n", "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("flusher policy ").count(),
        1,
        "one flusher\n{}",
        describe(&out)
    );
    assert!(
        stderr.contains("flusher policy 0\n"),
        "the flusher is SCHED_OTHER (0)\n{}",
        describe(&out)
    );
}
