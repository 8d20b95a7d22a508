use super::*;
use crate::findings::Severity;
use crate::findings::test_support::{check_levels, rule};
use serde_json::{Value, json};

fn severity(findings: &[Finding]) -> Option<Severity> {
    assert!(findings.len() <= 1, "{findings:?}");
    findings.first().map(|f| f.severity)
}

/// Two threads of 100 ms each; one lock on which they waited `wait_ns` in total.
fn locked(wait_ns: f64) -> Value {
    json!({
        "command": ["./bank"],
        "threads": [
            {"tid": 1, "wall_ns": 100_000_000, "lock_wait_ns": wait_ns / 2.0},
            {"tid": 2, "wall_ns": 100_000_000, "lock_wait_ns": wait_ns / 2.0},
            {"tid": 3, "wall_ns": 900_000_000, "lock_wait_ns": 0}],
        "locks": [{"address": "0x1000", "kind": "mutex", "acquisitions": 1000, "contended": 300,
            "wait_ns": wait_ns, "max_wait_ns": 1000, "hold_ns": 5_000_000, "threads": 2,
            "sites": [{"frames": [{"function": "transfer(int)", "file": "/src/bank.c", "line": 40}],
                       "user_frame": 0, "wait_ns": wait_ns, "contended": 300}],
            "holder_sites": [{"frames": [{"function": "audit", "module": "/bin/bank"}], "user_frame": 0}]}]
    })
}

#[test]
fn pthread_lock_thresholds_against_the_waiters_time() {
    let r = rule("lock-contention");
    // The share is of the waiting threads' 200 ms, not of the idle third thread's time.
    check_levels(r, |share| {
        severity(&pthread_locks(r, &locked(share * 200_000_000.0)))
    });
}

#[test]
fn pthread_lock_names_waiter_and_holder_and_bench_command() {
    let r = rule("lock-contention");
    let f = &pthread_locks(r, &locked(100_000_000.0))[0];
    assert!(f.title.contains("transfer at bank.c:40"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("held at audit (bank)")),
        "{f:?}"
    );
    assert!(
        f.remedy
            .contains("`stallscope bench --threads 1,2,4 ./bank`"),
        "{}",
        f.remedy
    );
}

#[test]
fn one_short_contended_lock_is_quiet() {
    let r = rule("lock-contention");
    let min_wait = r.param("min_wait_ns");
    let mut short = locked(min_wait * 0.99);
    // Even when it is most of the waiters' (short) time.
    for t in short["threads"].as_array_mut().unwrap() {
        t["wall_ns"] = json!(min_wait);
    }
    assert!(pthread_locks(r, &short).is_empty());
}

/// Two threads with sampled states of 1 s each; `share` of each in `function` (category `lock`
/// or `atomic`) over `samples` samples per thread.
fn sampled(category: &str, function: &str, share: f64, samples: u64) -> Value {
    let ns_key = format!("{category}_ns");
    let thread = |tid: u64| {
        let mut states = json!({"compute_ns": (1.0 - share) * 1e9, "samples": 1000});
        states[&ns_key] = json!(share * 1e9);
        json!({"tid": tid, "wall_ns": 1_000_000_000u64, "states": states,
            "state_sites": {category: [{"share": share, "samples": samples, "function": function,
                "user_frame": "simulate at sim.c:12", "frames": []}]}})
    };
    json!({"command": ["./sim"], "threads": [thread(1), thread(2)]})
}

#[test]
fn glibc_lock_thresholds_and_naming() {
    let r = rule("glibc-lock-contention");
    check_levels(r, |share| {
        severity(&internal_locks(r, &sampled("lock", "random", share, 100)))
    });
    let f = &internal_locks(r, &sampled("lock", "random", 0.5, 100))[0];
    assert!(f.title.contains("random"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("simulate at sim.c:12")),
        "{f:?}"
    );
}

#[test]
fn glibc_lock_leaves_pthread_locks_and_thin_samples_alone() {
    let r = rule("glibc-lock-contention");
    let pthread = sampled("lock", "pthread_mutex_lock", 0.9, 100);
    assert!(internal_locks(r, &pthread).is_empty());
    // Both threads together stay under the minimum number of samples.
    let thin = (r.param("min_samples") as u64 - 1) / 2;
    assert!(internal_locks(r, &sampled("lock", "random", 0.9, thin)).is_empty());
    assert!(internal_locks(r, &json!({"threads": [{"tid": 1}]})).is_empty());
}

#[test]
fn atomic_thresholds() {
    let r = rule("atomic-contention");
    check_levels(r, |share| {
        severity(&atomics(
            r,
            &sampled("atomic", "__aarch64_ldadd8_acq_rel", share, 100),
        ))
    });
}
