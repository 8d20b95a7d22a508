//! Cross-thread frees (glibc's allocator): memory allocated by one thread and freed by another is
//! found from the arenas of sampled frees, and the findings say so only when it happens.

mod common;

use common::*;

fn run(mode: &str) -> serde_json::Value {
    let dir = TempDir::new("cross-free");
    let exe = compile(dir.path(), "cross_free.c", &[]);
    let (out, path) = profile(dir.path(), "p.prof", &[], &[exe.to_str().unwrap(), mode], 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{mode} 400000\n")
    );
    report_json(&path)
}

fn finding_ids(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_consumer_freeing_the_producers_blocks_is_found() {
    let report = run("handoff");
    let cross = &report["alloc"]["cross_thread_frees"];
    let share = cross["share"].as_f64().expect("a share");
    // Every block the consumer frees was the producer's; main's few frees are its own.
    assert!(share > 0.95, "{cross:#}");
    assert!(cross["sampled_frees"].as_u64().unwrap() > 1000);
    let calls = cross["calls"].as_u64().unwrap();
    assert!((380_000..=420_000).contains(&calls), "{cross:#}");
    assert!(finding_ids(&report).contains(&"cross-thread-frees".to_string()));
}

#[test]
fn threads_freeing_their_own_blocks_are_not_cross() {
    let report = run("own");
    let cross = &report["alloc"]["cross_thread_frees"];
    assert!(
        cross["share"].as_f64().expect("a share") < 0.01,
        "{cross:#}"
    );
    assert!(!finding_ids(&report).contains(&"cross-thread-frees".to_string()));
}

#[test]
fn short_threads_freeing_their_own_blocks_are_not_cross() {
    // 20,000 threads, four at a time: each new thread gets the arena of an ended one, whose last
    // sampled allocation was that ended thread's. Its frees are its own all the same.
    let report = run("short");
    let cross = &report["alloc"]["cross_thread_frees"];
    if !cross.is_null() {
        assert!(
            cross["share"].as_f64().expect("a share") < 0.01,
            "{cross:#}"
        );
    }
    assert!(!finding_ids(&report).contains(&"cross-thread-frees".to_string()));
    // A thread's CPU time (counted from its clone) fits in its life, however short.
    for t in report["threads"].as_array().expect("threads") {
        let (cpu, life) = (
            t["cpu_ns"].as_u64().unwrap(),
            t["wall_ns"].as_u64().unwrap(),
        );
        assert!(cpu <= life, "CPU {cpu} ns in a life of {life} ns: {t}");
    }
}

/// Heaps of huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb=SIZE) may be larger than the 64 MiB
/// at whose boundary the interposer looks for a heap's heap_info: it then reads none (the
/// start-up check of glibc's internals, preload/glibc_check.c), measures no cross-thread frees,
/// and the report says why. The program runs as without stallscope.
#[test]
fn heaps_of_huge_pages_are_not_read_and_the_report_says_so() {
    let dir = TempDir::new("cross-free-huge");
    let exe = compile(dir.path(), "cross_free.c", &[]);
    let (out, path) = profile_with(
        dir.path(),
        "p.prof",
        &[],
        &[exe.to_str().unwrap(), "handoff"],
        0,
        |c| {
            c.env("GLIBC_TUNABLES", "glibc.malloc.hugetlb=2097152");
        },
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "handoff 400000\n");
    let report = report_json(&path);
    assert_eq!(report["arenas_unread"], true);
    assert_eq!(report["heap_unchecked"], false);
    assert!(
        report["alloc"]["cross_thread_frees"].is_null(),
        "{:#}",
        report["alloc"]["cross_thread_frees"]
    );
    assert!(!finding_ids(&report).contains(&"cross-thread-frees".to_string()));
    let text = String::from_utf8_lossy(&stallscope_in_repo(&["report", path.to_str().unwrap()]))
        .into_owned();
    assert!(
        text.contains("heaps of huge pages") && !text.contains("did not read as expected"),
        "{text}"
    );
    // Without the tunable the same program's heap is read (the check passed: no note).
    let plain = run("handoff");
    assert!(!plain["alloc"]["cross_thread_frees"].is_null());
    assert_eq!(plain["arenas_unread"], false);
    assert_eq!(plain["heap_unchecked"], false);
}
