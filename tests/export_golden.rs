//! `stallscope export` on a fixed profile, tests/golden/sample.prof, compared with the golden
//! files next to it. `STALLSCOPE_BLESS=1 cargo test --test export_golden` rewrites them.
//!
//! sample.prof is a real profile of tests/golden/work.c, passed through tests/golden/anonymize.py:
//! its modules' paths point nowhere and carry no build id, so frames print as `module+offset` on
//! every machine (symbolization needs the files, which no machine has).

mod common;

use common::{TempDir, check_golden as check, stallscope_in_repo};
use serde_json::Value;
use std::io::Read;
use std::process::Command;

/// `stallscope export ARGS tests/golden/sample.prof`, run from the crate's root (the JSON names
/// the profile by the path it was given).
fn export(args: &[&str]) -> Vec<u8> {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    all.push("tests/golden/sample.prof");
    stallscope_in_repo(&all)
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("pprof output is gzip");
    out
}

#[test]
fn collapsed_matches_golden() {
    for weight in ["calls", "bytes", "time", "lock-wait"] {
        let out = export(&["-f", "collapsed", "--weight", weight]);
        check(&format!("sample.collapsed-{weight}.txt"), &out);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.is_empty(), "no stacks for weight {weight}");
        for line in text.lines() {
            let (stack, value) = line.rsplit_once(' ').expect("`stack value`");
            assert!(value.parse::<u64>().unwrap() > 0, "{line}");
            let frames: Vec<&str> = stack.split(';').collect();
            assert!(frames.iter().all(|f| !f.is_empty()), "{line}");
            // Root first: the thread's entry in libc, the allocator function or lock wait last.
            assert!(frames[0].starts_with("libc.so.6+0x"), "{line}");
            let leaf = *frames.last().unwrap();
            if weight == "lock-wait" {
                assert_eq!(leaf, "mutex wait", "{line}");
            } else {
                assert_eq!(leaf, "malloc", "{line}");
                assert!(stack.contains(";work+0x"), "{line}");
            }
        }
    }
}

#[test]
fn collapsed_calls_are_the_reports_site_calls() {
    let report: Value = serde_json::from_slice(&export(&["-f", "json"])).unwrap();
    let text = String::from_utf8(export(&["-f", "collapsed", "--weight", "calls"])).unwrap();
    let total: u64 = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let sites: u64 = report["alloc"]["sites"]
        .as_array()
        .expect("alloc.sites")
        .iter()
        .map(|s| s["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(total, sites);
}

#[test]
fn json_matches_golden_and_report() {
    let out = export(&["-f", "json"]);
    check("sample.json", &out);
    let report = stallscope_in_repo(&["report", "--json", "tests/golden/sample.prof"]);
    assert_eq!(out, report, "export -f json differs from report --json");
}

/// Checks the Trace Event Format's required fields: every event has name, ph, pid, tid and ts;
/// complete events a dur; ph is one of the format's phases; counters have numeric args.
fn check_trace_events(doc: &Value) {
    assert_eq!(doc["displayTimeUnit"], "ns");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    assert!(!events.is_empty());
    const PHASES: &[&str] = &[
        "B", "E", "X", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "N", "O", "D", "M", "V",
        "v", "R", "c", "(", ")",
    ];
    for e in events {
        assert!(e["name"].is_string(), "no name: {e}");
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(PHASES.contains(&ph), "unknown ph {ph}: {e}");
        assert!(e["pid"].is_u64(), "no pid: {e}");
        assert!(e["tid"].is_u64(), "no tid: {e}");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "no ts: {e}");
        if ph == "X" {
            assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "no dur: {e}");
        }
        if ph == "C" {
            let args = e["args"].as_object().expect("counter args");
            assert!(args.values().all(Value::is_number), "{e}");
        }
        if ph == "M" {
            assert!(e["args"]["name"].is_string(), "{e}");
        }
    }
}

#[test]
fn chrome_matches_golden_and_trace_event_format() {
    let out = export(&["-f", "chrome"]);
    check("sample.chrome.json", &out);
    let doc: Value = serde_json::from_slice(&out).unwrap();
    check_trace_events(&doc);
    let events = doc["traceEvents"].as_array().unwrap();
    let count = |ph: &str, name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["name"] == name)
            .count()
    };
    assert_eq!(count("M", "process_name"), 1);
    assert_eq!(count("M", "thread_name"), 3);
    assert_eq!(count("X", "thread"), 3);
    assert_eq!(count("X", "build"), 2, "one `build` phase per worker");
    assert!(count("C", "heap") >= 1);
    for e in events.iter().filter(|e| e["ph"] == "C") {
        for key in ["in_use", "free", "rss"] {
            assert!(e["args"][key].is_u64(), "{e}");
        }
    }
}

#[test]
fn pprof_matches_golden_and_go_tool_pprof_reads_it() {
    let out = export(&["-f", "pprof"]);
    let proto = gunzip(&out);
    check("sample.pprof.pb", &proto);
    let Some(go) = common::go() else {
        return;
    };
    let dir = TempDir::new("export-golden");
    let file = dir.join("sample.pb.gz");
    std::fs::write(&file, &out).unwrap();
    for sample_index in [
        "alloc_objects",
        "alloc_space",
        "alloc_time",
        "contentions",
        "delay",
    ] {
        let top = Command::new(go)
            .args(["tool", "pprof", "-top", "-sample_index", sample_index])
            .arg(&file)
            .env("PPROF_TMPDIR", &dir)
            .env("HOME", &dir)
            // Go builds `pprof` on first use: keep its build cache between runs (HOME is a
            // fresh directory).
            .env("GOCACHE", common::repo_file("target/go-cache"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&top.stdout);
        assert!(
            top.status.success(),
            "go tool pprof failed: {}",
            String::from_utf8_lossy(&top.stderr)
        );
        let leaf = if ["contentions", "delay"].contains(&sample_index) {
            "mutex wait"
        } else {
            "malloc"
        };
        assert!(text.contains(leaf), "{sample_index}: no {leaf} in\n{text}");
        assert!(
            text.contains("work+0x"),
            "{sample_index}: no work frame in\n{text}"
        );
    }
}
