//! The findings engine on real profiles of small programs (tests/findings_programs/): each problem
//! program gets the finding naming its user function, and programs without a problem get none.

mod common;

use common::{TempDir, compile_file, profile, report_json, stallscope};
use serde_json::Value;
use std::process::Command;

/// Compiles tests/findings_programs/`source`, profiles it and returns its report JSON and profile.
/// The programs' runs take turns: efficiency and contention are about threads running at once,
/// which another test's program on the same two cores would change.
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn profiled(dir: &TempDir, source: &str) -> (Value, std::path::PathBuf) {
    let src = common::test_source("findings_programs", source);
    let exe = compile_file(dir.path(), &src, &[]);
    let name = format!("{}.prof", exe.file_name().unwrap().to_str().unwrap());
    let turn = ONE_RUN_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_, prof) = profile(dir.path(), &name, &["-q"], &[&exe], 0);
    drop(turn);
    (report_json(&prof), prof)
}

fn findings(report: &Value) -> &[Value] {
    report["findings"]
        .as_array()
        .expect("report JSON has a findings array")
}

fn finding<'a>(report: &'a Value, id: &str) -> &'a Value {
    findings(report)
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| {
            panic!(
                "no {id} finding in\n{}",
                serde_json::to_string_pretty(&report["findings"]).unwrap()
            )
        })
}

/// The finding's title and evidence as one text, for naming checks.
fn text_of(f: &Value) -> String {
    let evidence: Vec<&str> = f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    format!("{}\n{}", f["title"].as_str().unwrap(), evidence.join("\n"))
}

fn assert_well_formed(report: &Value) {
    for f in findings(report) {
        for key in ["id", "title", "cause", "remedy"] {
            assert!(
                f[key].as_str().is_some_and(|s| !s.is_empty()),
                "{key} in {f}"
            );
        }
        assert!(
            ["high", "medium", "low", "info"].contains(&f["severity"].as_str().unwrap()),
            "{f}"
        );
        assert!(
            f["evidence"].as_array().is_some_and(|e| !e.is_empty()),
            "{f}"
        );
    }
}

#[test]
fn tiny_allocations_in_threads_name_the_user_function() {
    let dir = TempDir::new("findings-tiny");
    let (report, prof) = profiled(&dir, "tiny_allocs_threads.c");
    assert_well_formed(&report);
    let small = finding(&report, "small-allocations");
    assert!(
        text_of(small).contains("build_tokens"),
        "{}",
        text_of(small)
    );
    assert_ne!(small["severity"], "info", "{small}");
    let time = finding(&report, "allocator-time");
    assert!(text_of(time).contains("build_tokens"), "{}", text_of(time));
    let remedy = time["remedy"].as_str().unwrap();
    assert!(
        remedy.contains("stallscope bench --allocators glibc,jemalloc,mimalloc")
            && remedy.contains("tiny_allocs_threads"),
        "{remedy}"
    );
    one_allocator_figure_in_every_part_of_the_report(&report, &prof, time);
}

/// The allocator's time is one figure in the whole report: the header gives the finding's share
/// of CPU time and the same time on a CPU as the threads table and the JSON, and the functions'
/// timed lengths add up to no more than the threads lived (calls of a few nanoseconds, timed by
/// two clock reads that cost as much, once read 100% of thread time in the header beside a
/// finding of 47% of CPU time, and the functions' times added up to 130% of it).
fn one_allocator_figure_in_every_part_of_the_report(
    report: &Value,
    prof: &std::path::Path,
    time: &Value,
) {
    let out = Command::new(stallscope())
        .arg("report")
        .arg(prof)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let share = report["alloc"]["share_of_cpu"]
        .as_f64()
        .expect("share_of_cpu");
    let pct = format!("{:.1}% of the threads' CPU time", share * 100.0);
    assert!(
        time["title"].as_str().unwrap().contains(&pct),
        "{pct} in {time}"
    );
    let header = text
        .lines()
        .find(|l| l.trim_start().starts_with("allocator "))
        .expect("the header's allocator line");
    // 8 million calls on four threads: some 150 ms of CPU time, 40 or more CPU samples at the
    // kernel's 250 Hz; the views take their time on a CPU from 20.
    let samples = report["alloc"]["cpu_samples"]
        .as_u64()
        .expect("cpu_samples");
    assert_eq!(
        report["alloc"]["time_on_cpu"].as_bool(),
        Some(samples >= 20),
        "{}",
        report["alloc"]
    );
    if samples >= 20 {
        assert!(
            header.contains(&pct) && header.contains("on a CPU"),
            "{header} ({pct})"
        );
        assert!(
            text.contains("Threads (shares of each thread's life; the allocator's time on a CPU)"),
            "{text}"
        );
    } else {
        assert!(header.contains(" inside ("), "{header}");
    }
    let threads = report["threads"].as_array().expect("threads");
    let (mut on_cpu, mut lives) = (0u64, 0u64);
    for t in threads {
        let (a, c) = (
            t["alloc_cpu_ns"].as_u64().unwrap(),
            t["cpu_ns"].as_u64().unwrap(),
        );
        assert!(a <= c, "{t}");
        on_cpu += a;
        lives += t["wall_ns"].as_u64().unwrap();
    }
    assert_eq!(
        report["alloc"]["cpu_ns"].as_u64(),
        Some(on_cpu),
        "{}",
        report["alloc"]
    );
    let functions: u64 = report["alloc"]["functions"]
        .as_object()
        .expect("alloc.functions")
        .values()
        .map(|f| f["time_ns"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        functions <= lives + lives / 100,
        "functions {functions} ns, threads' lives {lives} ns"
    );
}

/// mutex_waiters.c holds its mutex across a sleep: the finding names the lock, the holder's sleep
/// in its function and the waiters' function, and the lock is not reported a second time as the
/// contention of a holder at work (its holder was asleep, not working).
#[test]
fn a_mutex_held_across_a_sleep_names_the_sleep_and_the_waiter() {
    let dir = TempDir::new("findings-mutex");
    let (report, _) = profiled(&dir, "mutex_waiters.c");
    assert_well_formed(&report);
    let lock = finding(&report, "lock-held-while-asleep");
    // The holder's sleep, named by the user function that called it (built without -g: no line).
    let title = lock["title"].as_str().unwrap();
    assert!(
        title.contains("counter_lock") && title.contains("sleep in update_shared_counter"),
        "{lock}"
    );
    assert!(
        text_of(lock).contains("the waiters were at update_shared_counter"),
        "{lock}"
    );
    assert!(
        findings(&report)
            .iter()
            .all(|f| f["id"] != "lock-contention"),
        "{:#?}",
        findings(&report)
    );
    let efficiency = finding(&report, "parallel-efficiency");
    // The waiters wait for the lock; its holder sleeps while holding it: either can be the
    // biggest part, depending on how the two threads' turns fell.
    let title = efficiency["title"].as_str().unwrap();
    assert!(
        title.contains("lock waits") || title.contains("blocking"),
        "{efficiency}"
    );
    assert!(
        lock["remedy"]
            .as_str()
            .unwrap()
            .contains("stallscope bench --threads 1,2,4"),
        "{lock}"
    );
}

/// sleepy_workers.c releases its mutex, then sleeps: its holders sleep in the tails of the waits
/// (the waiter's wake-up after the release) and, with 8 workers, while the others take the lock
/// in turn, not while holding. The lock is not reported as held while asleep (nor across I/O).
#[test]
fn a_lock_released_before_a_sleep_is_not_held_while_asleep() {
    let dir = TempDir::new("findings-sleepy");
    let (report, _) = profiled(&dir, "sleepy_workers.c");
    assert_well_formed(&report);
    // The trap is there: many short waits. Each mutex wait knows when the release that let it in
    // woke it, and the previous holder's samples count up to that wake only. With 8 workers the
    // lock changes hands during a wait: the wait is cut where other waiters took it, each holder's
    // samples counting while it held the lock (the holders' time asleep inside the waits 23%
    // of it, 36% when the whole wait went to its first holder), so parts of waits lie on more
    // edges than the waits began on.
    let (mut waits, mut parts, mut wait_ns, mut tails) = (0u64, 0u64, 0u64, 0u64);
    for e in report["wait_for"]["edges"].as_array().unwrap() {
        if e["kind"] == "lock" {
            waits += e["waits_begun"].as_u64().unwrap();
            parts += e["waits"].as_u64().unwrap();
            wait_ns += e["wait_ns"].as_u64().unwrap();
            tails += e["woken_tail_ns"].as_u64().unwrap();
        }
    }
    assert!(
        waits >= 500 && tails > 0 && tails < wait_ns,
        "{waits} waits, {tails} ns of {wait_ns} ns after the release's wake"
    );
    assert!(
        parts > waits,
        "{waits} waits, on {parts} edges: none was cut"
    );
    for f in findings(&report) {
        assert!(
            f["id"] != "lock-held-while-asleep" && f["id"] != "lock-held-across-io",
            "{f:#}"
        );
    }
}

/// glibc's sprintf does not allocate for plain conversions (the profile of sprintf_loop.c holds a
/// single allocator call, stdout's buffer), so the library hot spot is shown with stream
/// extraction, which allocates in every `>>` into a long std::string.
#[test]
fn stream_extraction_is_a_library_hot_spot_naming_the_caller() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("findings-stream");
    let (report, prof) = profiled(&dir, "stream_parse.cpp");
    assert_well_formed(&report);
    let hotspots: Vec<&Value> = findings(&report)
        .iter()
        .filter(|f| f["id"] == "library-allocation-hotspot")
        .collect();
    let extraction = hotspots
        .iter()
        .find(|f| f["title"].as_str().unwrap().contains("stream extraction"))
        .unwrap_or_else(|| {
            // What the run found instead, and the report's figures: a rare miss in a full suite
            // (never alone, once with no finding at all) says which threshold it fell under.
            let text = Command::new(stallscope())
                .arg("report")
                .arg(&prof)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            panic!(
                "no stream extraction hot spot in {hotspots:?}; findings: {:?}; the report:\n{}",
                findings(&report)
                    .iter()
                    .map(|f| format!("{} {}", f["id"], f["title"]))
                    .collect::<Vec<_>>(),
                text.lines().take(60).collect::<Vec<_>>().join("\n")
            )
        });
    let title = extraction["title"].as_str().unwrap();
    assert!(
        title.contains("operator>>") && title.contains("parse_records"),
        "{title}"
    );
}

#[test]
fn programs_without_a_problem_get_no_finding() {
    let dir = TempDir::new("findings-quiet");
    for source in [
        "compute_only.c",
        "compute_threads.c",
        "trivial.c",
        "sprintf_loop.c",
    ] {
        let (report, _) = profiled(&dir, source);
        let loud: Vec<&Value> = findings(&report)
            .iter()
            .filter(|f| f["severity"] != "info")
            .collect();
        assert!(loud.is_empty(), "{source}: {loud:?}");
        if source == "sprintf_loop.c" {
            let calls = report["alloc"]["total_calls"].as_u64().unwrap();
            assert!(calls < 100, "glibc's sprintf now allocates: {calls} calls");
        }
    }
}

#[test]
fn report_text_shows_findings_first() {
    let dir = TempDir::new("findings-text");
    let (_, prof) = profiled(&dir, "mutex_waiters.c");
    let out = Command::new(stallscope())
        .arg("report")
        .arg(&prof)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Findings\n"), "{text}");
    let lock = text
        .find("[lock-held-while-asleep]")
        .expect("lock finding in text");
    let summary = text.find("stallscope profile").expect("summary in text");
    assert!(lock < summary, "{text}");
}

/// tests/programs/heap_order.cpp runs the same insert benchmark before and after churning the heap
/// through large node containers: the second run's `malloc` is slower per call, and the finding
/// gives the heap it started with.
#[test]
fn a_phase_slowed_by_a_churned_heap_is_found_with_its_heap_state() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("findings-phase");
    let exe = common::compile(
        dir.path(),
        "heap_order.cpp",
        &["-O2", &common::include_flag()],
    );
    let (_, prof) = profile(
        dir.path(),
        "heap_order.prof",
        &["-q"],
        &[exe.to_str().unwrap(), "300000"],
        0,
    );
    let report = report_json(&prof);
    assert_well_formed(&report);
    let slow = finding(&report, "allocator-slow-phase");
    let text = text_of(slow);
    assert!(
        text.contains("\"insert #2\"") && text.contains("\"insert #1\""),
        "{text}"
    );
    assert!(text.contains("free chunks"), "{text}");
}

/// Every percentage a finding prints ("12.5%"), for bounds checks.
fn percentages(f: &Value) -> Vec<f64> {
    let text = text_of(f);
    let mut out = Vec::new();
    for (i, _) in text.match_indices('%') {
        let digits: String = text[..i]
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .filter(|c| *c != ',')
            .collect();
        if let Ok(v) = digits.parse::<f64>() {
            out.push(v);
        }
    }
    out
}

fn severity_of<'a>(report: &'a Value, id: &str) -> Option<&'a str> {
    findings(report)
        .iter()
        .find(|f| f["id"] == id)
        .map(|f| f["severity"].as_str().unwrap())
}

#[test]
fn small_requests_that_cost_little_are_at_most_low() {
    // Nearly every request is small, but the allocator takes a few percent of the CPU time: the
    // severity follows what the allocations cost, not how many of them are small.
    let dir = TempDir::new("findings-small-light");
    let (report, _) = profiled(&dir, "small_allocs_light.c");
    assert_well_formed(&report);
    let share = report["alloc"]["share_of_cpu"]
        .as_f64()
        .expect("share_of_cpu");
    assert!(share < 0.1, "the allocator took {share} of CPU time");
    for id in [
        "small-allocations",
        "allocator-time",
        "library-allocation-hotspot",
    ] {
        let severity = severity_of(&report, id);
        assert!(
            matches!(severity, None | Some("low") | Some("info")),
            "{id} is {severity:?} with the allocator at {share}: {:#}",
            report["findings"]
        );
    }
}

#[test]
fn allocator_shares_on_an_oversubscribed_machine_stay_within_cpu_time() {
    // 16 threads on 2 CPUs: timed allocator calls include the time their thread waited for a CPU
    // inside them (they added up to "62.1% of the threads' CPU time", one thread at 100%, where
    // the samples saw 7%). The allocator's share is of its time on a CPU.
    let dir = TempDir::new("findings-oversubscribed-mixed");
    let (report, _) = profiled(&dir, "oversubscribed_mixed.c");
    assert_well_formed(&report);
    let threads = report["threads"].as_array().expect("threads");
    let (mut cpu, mut sampled) = (0u64, 0u64);
    for t in threads {
        let (c, a, life) = (
            t["cpu_ns"].as_u64().unwrap(),
            t["alloc_cpu_ns"].as_u64().unwrap(),
            t["wall_ns"].as_u64().unwrap(),
        );
        assert!(a <= c && c <= life, "{t}");
        cpu += c;
        sampled += t["states"]["cpu_samples"]["allocator_ns"]
            .as_u64()
            .unwrap_or(0);
    }
    let share = report["alloc"]["share_of_cpu"]
        .as_f64()
        .expect("share_of_cpu");
    assert!((0.0..=1.0).contains(&share), "{share}");
    // Independent of the timings: the CPU samples' allocator share.
    let samples_share = sampled as f64 / cpu.max(1) as f64;
    assert!(
        (share - samples_share).abs() < 0.05,
        "allocator share {share}, samples {samples_share}"
    );
    assert_ne!(
        severity_of(&report, "allocator-time"),
        Some("high"),
        "{:#}",
        report["findings"]
    );
    for f in findings(&report) {
        for p in percentages(f) {
            assert!(p <= 100.0, "{p}% in {f:#}");
        }
    }
}
