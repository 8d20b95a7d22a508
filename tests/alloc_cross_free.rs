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
