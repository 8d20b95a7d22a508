//! Phases and heap snapshots (include/stallscope.h): the classic order effect, where the same
//! insert benchmark is several times slower per `malloc` after large node-based containers were
//! built and destroyed, shows in the phase table with the heap state that explains it.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn phases<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    report["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter(|p| p["name"] == name)
        .collect()
}

fn mean(phase: &Value, function: &str) -> f64 {
    phase["alloc"]["functions"][function]["mean_ns"]
        .as_f64()
        .unwrap_or_else(|| panic!("no mean for {function} in {phase}"))
}

#[test]
fn malloc_is_several_times_slower_per_call_after_the_heap_was_churned() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("phases-order");
    let exe = compile(dir.path(), "heap_order.cpp", &["-O2", &include_flag()]);
    let (_, prof) = profile(
        dir.path(),
        "order.prof",
        &[],
        &[exe.to_str().unwrap(), "300000"],
        0,
    );
    let report = report_json(&prof);

    let inserts = phases(&report, "insert");
    assert_eq!(
        inserts.len(),
        2,
        "two runs of the insert phase: {}",
        report["phases"]
    );
    let (first, second) = (inserts[0], inserts[1]);
    assert_eq!(
        num(first, &["alloc", "functions", "malloc", "calls"]),
        num(second, &["alloc", "functions", "malloc", "calls"]),
        "the same work twice"
    );
    let ratio = mean(second, "malloc") / mean(first, "malloc");
    // Measured here at 10-20x (the large bucket-array requests consolidate ~1.2 million fast-bin
    // chunks); 3x leaves room for a noisy machine.
    assert!(
        ratio >= 3.0,
        "malloc per call: {} ns then {} ns ({ratio:.1}x)",
        mean(first, "malloc"),
        mean(second, "malloc")
    );

    // The snapshot taken when the second run began shows the freed chunks.
    let before = &second["heap_before"];
    assert!(before["glibc"].as_bool().unwrap());
    assert!(
        num(before, &["fastbin_chunks"]) > 500_000,
        "fast-bin chunks before the second run: {before}"
    );
    assert!(
        num(before, &["free_bytes"]) > 20 << 20,
        "free bytes before the second run: {before}"
    );
    assert!(
        num(&first["heap_before"], &["fastbin_chunks"]) < 1000,
        "a fresh heap: {}",
        first["heap_before"]
    );
    assert!(
        before["bins"].as_array().is_some_and(|b| !b.is_empty()),
        "malloc_info's bins were parsed"
    );

    // The report flags it, naming the phase and the heap state.
    let flags = report["phase_flags"].as_array().expect("phase_flags");
    let flag = flags
        .iter()
        .find(|f| f["function"] == "malloc" && f["phase"] == "insert #2");
    let flag = flag.unwrap_or_else(|| panic!("no malloc flag for the second insert: {flags:?}"));
    let message = flag["message"].as_str().unwrap();
    assert!(
        message.contains("fast bins") && message.contains("insert #1"),
        "{message}"
    );
    assert!(
        !flags.iter().any(|f| f["phase"] == "insert #1"),
        "the fresh run is not flagged: {flags:?}"
    );

    // The terminal report shows the table and the flag.
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&prof)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Phases") && text.contains("insert #2") && text.contains("Heap snapshots"),
        "{text}"
    );
}

#[test]
fn snapshots_come_at_start_phase_boundaries_on_request_and_at_exit() {
    let dir = TempDir::new("phases-c");
    let exe = compile(dir.path(), "phases_c.c", &[&include_flag()]);
    let (out, prof) = profile(dir.path(), "c.prof", &[], &[exe.to_str().unwrap()], 0);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "phases done\n");
    let report = report_json(&prof);
    let labels: Vec<&str> = report["heap_snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.first(), Some(&"start"));
    assert_eq!(labels.last(), Some(&"exit"));
    for expected in [
        "begin outer",
        "begin inner",
        "end inner",
        "between",
        "begin worker",
        "end worker",
        "end outer",
    ] {
        assert!(
            labels.contains(&expected),
            "{expected} missing from {labels:?}"
        );
    }
    for h in report["heap_snapshots"].as_array().unwrap() {
        assert!(
            num(h, &["rss_bytes"]) > 0 && num(h, &["in_use_bytes"]) > 0,
            "{h}"
        );
        assert!(num(h, &["duration_ns"]) < 1_000_000_000, "{h}");
    }
    let outer = phases(&report, "outer")[0];
    let inner = phases(&report, "inner")[0];
    let worker = phases(&report, "worker")[0];
    assert_eq!(
        (
            num(outer, &["depth"]),
            num(inner, &["depth"]),
            num(worker, &["depth"])
        ),
        (0, 1, 0)
    );
    assert_ne!(
        num(worker, &["tid"]),
        num(outer, &["tid"]),
        "phases are per thread"
    );
    assert_eq!(
        num(worker, &["alloc", "functions", "malloc", "calls"]),
        1000
    );
    assert_eq!(num(worker, &["alloc", "functions", "free", "calls"]), 1000);
    assert!(num(inner, &["alloc", "functions", "malloc", "calls"]) >= 1);
    assert!(
        num(inner, &["begin_ns"]) >= num(outer, &["begin_ns"])
            && num(inner, &["end_ns"]) <= num(outer, &["end_ns"])
    );
    assert_eq!(
        report["phases"].as_array().unwrap().len(),
        3,
        "the extra end is ignored"
    );
}

#[test]
fn markers_without_stallscope_change_nothing() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("phases-plain");
    for (source, args) in [("phases_c.c", vec![]), ("heap_order.cpp", vec!["20000"])] {
        let exe = compile(dir.path(), source, &["-O2", &include_flag()]);
        let mut cmd = vec![exe.to_str().unwrap().to_string()];
        cmd.extend(args.iter().map(|a| a.to_string()));
        let plain = plain_run(dir.path(), &cmd, |_| {});
        assert_eq!(exit_code(&plain), 0, "{}", describe(&plain));
        let profiled = stallscope_run(dir.path(), &["-q"], &cmd);
        assert_eq!(exit_code(&profiled), 0, "{}", describe(&profiled));
        assert_eq!(
            plain.stdout, profiled.stdout,
            "{source}: same output with and without stallscope"
        );
        assert!(!plain.stdout.is_empty());
    }
}

#[test]
fn periodic_and_signalled_snapshots() {
    let dir = TempDir::new("phases-periodic");
    let (_, prof) = profile(
        dir.path(),
        "p.prof",
        &["--snapshot-every", "100ms"],
        &["sleep", "0.45"],
        0,
    );
    let report = report_json(&prof);
    let periodic = report["heap_snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["label"] == "periodic")
        .count();
    assert!(
        (2..=5).contains(&periodic),
        "about one snapshot per 100 ms over 450 ms: {periodic}"
    );

    let prof = dir.join("s.prof");
    let mut child = std::process::Command::new(stallscope())
        .args(["run", "-q", "--snapshot-on-signal", "-o"])
        .arg(&prof)
        .args([
            "--",
            "sh",
            "-c",
            "sleep 0.3; kill -USR2 $$; sleep 0.3; echo ok",
        ])
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the program keeps running after SIGUSR2: {status:?}"
    );
    let report = report_json(&prof);
    assert!(
        report["heap_snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["label"] == "SIGUSR2"),
        "{}",
        report["heap_snapshots"]
    );

    let out = stallscope_run(dir.path(), &["--snapshot-every", "soon"], &["true"]);
    assert_eq!(
        exit_code(&out),
        2,
        "a bad duration is a usage error: {}",
        describe(&out)
    );
}

#[test]
fn another_allocator_gets_no_glibc_heap_details() {
    let jemalloc = Path::new("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2");
    if !have_file(&[jemalloc.to_str().unwrap()], "libjemalloc2") {
        return;
    }
    let dir = TempDir::new("phases-jemalloc");
    let exe = compile(dir.path(), "phases_c.c", &[&include_flag()]);
    let (_, prof) = profile_with(
        dir.path(),
        "j.prof",
        &[],
        &[exe.to_str().unwrap()],
        0,
        |c| {
            c.env("LD_PRELOAD", jemalloc);
        },
    );
    let report = report_json(&prof);
    assert!(
        report["allocator"].as_str().unwrap().contains("jemalloc"),
        "{}",
        report["allocator"]
    );
    let snaps = report["heap_snapshots"].as_array().unwrap();
    assert!(
        !snaps.is_empty() && snaps.iter().all(|h| h["glibc"] == false),
        "{snaps:?}"
    );
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&prof)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("glibc-only"));
}
