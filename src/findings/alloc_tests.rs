use super::*;
use crate::findings::Severity;
use crate::findings::test_support::{check_levels, rule};
use serde_json::{Value, json};

fn severity(findings: &[Finding]) -> Option<Severity> {
    assert!(findings.len() <= 1, "{findings:?}");
    findings.first().map(|f| f.severity)
}

/// A report whose allocation requests are `small` of 1000 at 16 bytes or less, the rest 64.
fn sized(small: f64, calls: u64, alloc_share: f64) -> Value {
    let small_count = (small * 1000.0).round() as u64;
    json!({
        "command": ["./tokens", "in.txt"],
        "alloc": {
            "total_calls": calls, "share_of_thread_time": alloc_share,
            "size_histogram": [
                {"min_bytes": 9, "max_bytes": 16, "count": small_count},
                {"min_bytes": 33, "max_bytes": 64, "count": 1000 - small_count}],
            "sites": [
                {"frames": [{"function": "make_token(char const*)", "file": "/src/tok.c", "line": 9}],
                 "user_frame": 0, "calls": small_count, "bytes": small_count * 16, "samples": 40},
                {"frames": [{"function": "big_buffer", "module": "/bin/tokens"}],
                 "user_frame": 0, "calls": 1000 - small_count, "bytes": (1000 - small_count) * 64, "samples": 9}]
        }
    })
}

#[test]
fn small_allocations_thresholds() {
    let r = rule("small-allocations");
    check_levels(r, |share| {
        severity(&small_allocations(r, &sized(share, 50_000, 0.2)))
    });
}

#[test]
fn small_allocations_name_the_site_and_the_bench_command() {
    let r = rule("small-allocations");
    let f = &small_allocations(r, &sized(0.95, 50_000, 0.2))[0];
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("make_token at tok.c:9")),
        "{f:?}"
    );
    assert!(
        !f.evidence.iter().any(|e| e.contains("big_buffer")),
        "{f:?}"
    );
    assert!(
        f.remedy
            .contains("stallscope bench --allocators glibc,jemalloc,mimalloc './tokens in.txt'"),
        "{}",
        f.remedy
    );
}

#[test]
fn small_allocations_stay_quiet_for_few_calls_or_little_allocator_time() {
    let r = rule("small-allocations");
    let min_calls = r.param("min_calls") as u64;
    assert!(small_allocations(r, &sized(1.0, min_calls - 1, 0.5)).is_empty());
    let min_share = r.param("min_alloc_share");
    assert!(small_allocations(r, &sized(1.0, 1_000_000, min_share * 0.99)).is_empty());
    assert!(!small_allocations(r, &sized(1.0, min_calls, min_share)).is_empty());
}

/// A report whose `share` of 10,000 allocation requests pass through `library` frames.
fn through_library(share: f64, library: &[&str], user_index: usize) -> Value {
    let calls = (share * 10_000.0).round() as u64;
    let mut frames: Vec<Value> = vec![json!({"function": "operator new(unsigned long)"})];
    frames.extend(library.iter().map(|f| json!({"function": f})));
    frames.push(
        json!({"function": "load_entities(std::istream&)", "file": "/src/load.cpp", "line": 31}),
    );
    frames.push(json!({"function": "main"}));
    let user = if user_index == usize::MAX {
        frames.len() - 2
    } else {
        user_index
    };
    json!({
        "command": ["./load"],
        "alloc": {
            "total_calls": 20_000, "share_of_thread_time": 0.1,
            "size_histogram": [{"min_bytes": 33, "max_bytes": 64, "count": 10_000}],
            "sites": [{"frames": frames, "user_frame": user, "calls": calls, "bytes": calls * 40, "samples": 30}]
        }
    })
}

const EXTRACTION: [&str; 2] = [
    "std::__cxx11::basic_string<char>::_M_mutate(unsigned long)",
    "std::basic_istream<char>& std::operator>><char>(std::basic_istream<char>&, std::__cxx11::basic_string<char>&)",
];

#[test]
fn library_hotspot_thresholds() {
    let r = rule("library-allocation-hotspot");
    check_levels(r, |share| {
        severity(&library_hotspots(
            r,
            &through_library(share, &EXTRACTION, usize::MAX),
        ))
    });
}

#[test]
fn library_hotspot_names_the_outermost_library_call_and_the_user_frame() {
    let r = rule("library-allocation-hotspot");
    let f = &library_hotspots(r, &through_library(0.6, &EXTRACTION, usize::MAX))[0];
    assert!(f.title.contains("stream extraction"), "{}", f.title);
    assert!(f.title.contains("std::operator>>"), "{}", f.title);
    assert!(
        f.title.contains("load_entities at load.cpp:31"),
        "{}",
        f.title
    );
    let printf = ["__vfprintf_internal", "sprintf"];
    let f = &library_hotspots(r, &through_library(0.6, &printf, usize::MAX))[0];
    assert!(
        f.title.contains("printf-family") && f.title.contains("sprintf"),
        "{}",
        f.title
    );
}

#[test]
fn library_frames_beyond_the_user_frame_do_not_count() {
    let r = rule("library-allocation-hotspot");
    // The user frame is the allocator's direct caller: the library frames are its callers.
    assert!(library_hotspots(r, &through_library(0.9, &EXTRACTION, 0)).is_empty());
    assert!(library_hotspots(r, &through_library(0.9, &["my_parser"], usize::MAX)).is_empty());
}

fn allocator_busy(share: f64, calls: u64, time_ns: u64, threads: Value) -> Value {
    json!({"command": ["./a"], "alloc": {"total_calls": calls, "time_ns": time_ns,
        "share_of_thread_time": share, "functions": {"malloc": {"calls": calls, "time_ns": time_ns}}},
        "threads": threads})
}

#[test]
fn allocator_time_thresholds_and_gates() {
    let r = rule("allocator-time");
    check_levels(r, |share| {
        severity(&allocator_time(
            r,
            &allocator_busy(share, 100_000, 50_000_000, json!([])),
        ))
    });
    let min_calls = r.param("min_calls") as u64;
    let min_time = r.param("min_time_ns") as u64;
    assert!(allocator_time(r, &allocator_busy(0.9, min_calls - 1, min_time, json!([]))).is_empty());
    assert!(allocator_time(r, &allocator_busy(0.9, min_calls, min_time - 1, json!([]))).is_empty());
}

#[test]
fn allocator_time_of_one_busy_thread_counts() {
    let r = rule("allocator-time");
    let threads = json!([
        {"tid": 7, "cpu_ns": 100_000_000, "alloc_ns": 60_000_000, "alloc_calls": 500_000},
        {"tid": 8, "cpu_ns": 900_000_000, "alloc_ns": 0, "alloc_calls": 0}]);
    let f = allocator_time(r, &allocator_busy(0.06, 500_000, 60_000_000, threads));
    assert_eq!(severity(&f), Some(Severity::High));
    assert!(f[0].title.contains("thread 7"), "{}", f[0].title);
}

#[test]
fn cross_thread_frees_thresholds() {
    let r = rule("cross-thread-frees");
    let at = |share: f64, calls: u64| json!({"alloc": {"cross_thread_frees": {"calls": calls, "share": share}}});
    check_levels(r, |share| {
        severity(&cross_thread_frees(r, &at(share, 100_000)))
    });
    assert!(cross_thread_frees(r, &at(0.9, r.param("min_calls") as u64 - 1)).is_empty());
    assert!(cross_thread_frees(r, &json!({"alloc": {}})).is_empty());
}
