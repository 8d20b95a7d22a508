//! The JSON report's contract (schema "stallscope.report/1"): every documented key is present
//! with its type, and the numbers are consistent with each other.

mod common;

use common::*;
use serde_json::Value;

fn require_u64(v: &Value, key: &str, context: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{context}.{key} must be an unsigned number: {v}"))
}

/// Buckets with `min_key`..`max_key` ranges: well-formed, in increasing order, not overlapping.
/// Size buckets are inclusive ranges (17..=24 bytes); latency buckets are powers of two written
/// as [min_ns, max_ns) (16..32 ns, then 32..64 ns), so a bucket may start where the last ended.
fn check_buckets(buckets: &Value, min_key: &str, max_key: &str, context: &str) -> u64 {
    let half_open = min_key == "min_ns";
    let buckets = buckets
        .as_array()
        .unwrap_or_else(|| panic!("{context} must be an array: {buckets}"));
    let mut previous_max: Option<u64> = None;
    let mut total = 0;
    for b in buckets {
        let (lo, hi) = (
            require_u64(b, min_key, context),
            require_u64(b, max_key, context),
        );
        total += require_u64(b, "count", context);
        assert!(lo <= hi, "{context}: bucket {b}");
        if let Some(p) = previous_max {
            assert!(
                lo > p || (half_open && lo == p),
                "{context}: buckets out of order or overlapping at {b}"
            );
        }
        previous_max = Some(hi);
    }
    total
}

#[test]
fn report_json_has_every_contract_key() {
    let dir = TempDir::new("schema");
    let alloc = compile(dir.path(), "alloc_known.c", &[]);
    let fight = compile(dir.path(), "mutex_fight.c", &[]);
    let (_, a) = profile(
        dir.path(),
        "alloc.prof",
        &["--timing", "exact"],
        &[&alloc],
        0,
    );
    let (_, f) = profile(dir.path(), "fight.prof", &[], &[&fight], 0);

    for (path, exe) in [(&a, &alloc), (&f, &fight)] {
        let report = report_json(path);
        let ctx = path.display().to_string();
        assert_eq!(report["schema"], "stallscope.report/1");
        let command = command_of(&report);
        assert_eq!(command, [exe.to_str().unwrap()], "{ctx}: command");
        let pid = require_u64(&report, "pid", &ctx);
        assert!(pid > 1, "{ctx}: pid {pid}");
        assert_eq!(report["exit_code"], 0, "{ctx}");
        assert!(report["signal"].is_null(), "{ctx}: signal");
        assert_eq!(report["complete"], true, "{ctx}: complete");
        let wall = require_u64(&report, "wall_ns", &ctx);
        assert!(wall > 0);

        let threads = report["threads"].as_array().expect("threads array");
        assert_eq!(threads.len(), 3, "{ctx}: main and two workers");
        for t in threads {
            let tctx = format!("{ctx} thread");
            let tid = require_u64(t, "tid", &tctx);
            assert!(tid > 0);
            assert!(t["name"].is_string(), "{tctx}: name {t}");
            let (cpu, twall) = (
                require_u64(t, "cpu_ns", &tctx),
                require_u64(t, "wall_ns", &tctx),
            );
            let alloc_ns = require_u64(t, "alloc_ns", &tctx);
            let wait = require_u64(t, "lock_wait_ns", &tctx);
            // One thread cannot use more CPU than it had wall time (20 ms of clock slack), nor
            // outlive the process, nor spend longer in the allocator or waiting than it lived.
            assert!(cpu <= twall + 20_000_000, "{tctx}: cpu_ns > wall_ns: {t}");
            assert!(
                twall <= wall + 1_000_000,
                "{tctx}: longer than the process ({wall}): {t}"
            );
            assert!(alloc_ns <= twall && wait <= twall, "{tctx}: {t}");
        }
        assert!(
            threads
                .iter()
                .map(|t| t["tid"].as_u64())
                .collect::<std::collections::HashSet<_>>()
                .len()
                == threads.len(),
            "{ctx}: distinct tids"
        );

        let functions = &report["alloc"]["functions"];
        for name in FUNCTIONS {
            let s = fn_stats(&report, name); // calls, bytes, time_ns are unsigned numbers
            let lat = check_buckets(
                &report["alloc"]["latency_histogram"][name],
                "min_ns",
                "max_ns",
                &format!("{ctx} latency_histogram.{name}"),
            );
            if s.calls == 0 {
                assert_eq!((s.bytes, s.time_ns, lat), (0, 0, 0), "{ctx}: {name} {s:?}");
            }
        }
        assert_eq!(functions["free"]["bytes"], 0, "{ctx}: free has no bytes");
        let sizes = check_buckets(
            &report["alloc"]["size_histogram"],
            "min_bytes",
            "max_bytes",
            &format!("{ctx} size_histogram"),
        );
        assert_eq!(
            sizes,
            allocation_calls(&report),
            "{ctx}: one size per allocation"
        );

        for l in report["locks"].as_array().expect("locks array") {
            let lctx = format!("{ctx} lock");
            assert!(
                parse_address(&l["address"]).is_some(),
                "{lctx}: address {l}"
            );
            assert!(l["kind"].is_string(), "{lctx}: kind {l}");
            let acq = require_u64(l, "acquisitions", &lctx);
            let contended = require_u64(l, "contended", &lctx);
            let wait = require_u64(l, "wait_ns", &lctx);
            let max_wait = require_u64(l, "max_wait_ns", &lctx);
            require_u64(l, "hold_ns", &lctx);
            assert!(contended <= acq && max_wait <= wait, "{lctx}: {l}");
            assert_eq!(
                contended == 0,
                wait == 0,
                "{lctx}: waits without contention? {l}"
            );
        }
    }

    // In exact mode every call is timed, so the threads' allocator time adds up to the functions'.
    let report = report_json(&a);
    let by_threads: u64 = report["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| num(t, &["alloc_ns"]))
        .sum();
    let by_functions: u64 = FUNCTIONS.iter().map(|f| fn_stats(&report, f).time_ns).sum();
    assert!(
        by_threads.abs_diff(by_functions) <= by_functions / 100 + 1000,
        "threads' alloc_ns {by_threads} vs functions' time_ns {by_functions}"
    );
}

#[test]
fn terminal_report_reads_the_profile() {
    let dir = TempDir::new("text-report");
    let fight = compile(dir.path(), "mutex_fight.c", &[]);
    let (out, path) = profile(dir.path(), "fight.prof", &[], &[&fight], 0);
    let address = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .expect("mutex address")
        .trim_start_matches("0x")
        .to_string();
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&path)
        .output()
        .expect("stallscope report");
    assert!(text.status.success(), "{}", describe(&text));
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains(&address) || stdout.contains("shared"),
        "the terminal report names the contended mutex ({address}):\n{stdout}"
    );
    assert!(stdout.to_lowercase().contains("malloc"), "{stdout}");

    // A file that is not a profile is an error, not a crash or an empty report.
    let bogus = dir.join("bogus.prof");
    std::fs::write(&bogus, b"this is not a profile").unwrap();
    let out = std::process::Command::new(stallscope())
        .args(["report", "--json"])
        .arg(&bogus)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a bogus file must be refused: {}",
        describe(&out)
    );
    assert!(!out.stderr.is_empty(), "with a message");
}
