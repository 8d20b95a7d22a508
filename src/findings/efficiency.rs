//! Parallel efficiency with its main cause: from the sampled thread states when present
//! (docs/STATES.md), else from the threads' CPU time, allocator time and lock waits.

use super::contention::{CATEGORIES, states_total};
use super::rules::Rule;
use super::view::{array, num, ratio};
use super::{Finding, build};
use crate::util::{fmt_ns, fmt_pct};
use serde_json::Value;

/// Efficiency with the time of each non-compute part the profile can attribute, and the time it
/// cannot (off-CPU for a reason it does not record).
struct Efficiency {
    value: f64,
    threads: f64,
    cpus: f64,
    /// The time `value` and the parts are shares of.
    basis: f64,
    parts: Vec<(&'static str, f64)>,
    unattributed: f64,
    /// Whether `value` counts the unattributed time as lost (the sampled states' definition).
    value_counts_unattributed: bool,
}

const UNATTRIBUTED_MEANING: &str = "not counted as a cause: the profile cannot attribute it (sleep, I/O or \
     waits it does not intercept, or waiting for a CPU on a busy machine)";

fn from_states(rule: &Rule, r: &Value) -> Option<Efficiency> {
    let pe = r.get("parallel_efficiency")?;
    let threads = num(pe, &["threads"])?;
    let cpus = num(pe, &["cpus"])?;
    let wall = num(pe, &["wall_ns"])?;
    if threads < rule.param("min_threads") || cpus < 2.0 || wall < rule.param("min_wall_ns") {
        return None;
    }
    // Threads that work: a thread blocked nearly all its sampled time (a main thread waiting in
    // join, an idle pool thread) is waiting for the others, not a cause of their inefficiency.
    let all: Vec<&Value> = array(r, &["threads"])
        .iter()
        .filter(|t| {
            t.get("states").is_some_and(|s| {
                let total = states_total(s);
                total > 0.0
                    && num(s, &["blocked_ns"]).unwrap_or(0.0)
                        < rule.param("waiting_thread_blocked_share") * total
            })
        })
        .collect();
    let working = all.len() as f64;
    if working < rule.param("min_threads") {
        return None;
    }
    let compute: f64 = all
        .iter()
        .filter_map(|t| num(t, &["states", "compute_ns"]))
        .sum();
    let capacity = wall * working.min(cpus);
    let value = ratio(compute, capacity);
    let threads = working;
    let parts: Vec<(&'static str, f64)> = CATEGORIES
        .iter()
        .map(|(k, name)| {
            (
                *name,
                all.iter().filter_map(|t| num(t, &["states", k])).sum(),
            )
        })
        .collect();
    let sampled: f64 = all
        .iter()
        .filter_map(|t| t.get("states").map(states_total))
        .sum();
    Some(Efficiency {
        value,
        threads,
        cpus,
        basis: capacity,
        parts,
        unattributed: (capacity - sampled).max(0.0),
        value_counts_unattributed: true,
    })
}

/// Without sampled states: computation (CPU time outside the allocator) against computation plus
/// the allocator and lock waits. Other off-CPU time is left out: from CPU and wall times alone,
/// waiting for a CPU on a loaded machine looks exactly like a program that sleeps.
fn from_cpu_time(rule: &Rule, r: &Value) -> Option<Efficiency> {
    let wall = num(r, &["wall_ns"])?;
    let cpus = num(r, &["ncpus"])?;
    let all = array(r, &["threads"]);
    // Threads that worked or waited for a lock to work; a main thread waiting in join is not one.
    let field = |t: &Value, k: &str| num(t, &[k]).unwrap_or(0.0);
    let active = all
        .iter()
        .filter(|t| {
            field(t, "cpu_ns") + field(t, "lock_wait_ns") >= rule.param("active_cpu_share") * wall
        })
        .count() as f64;
    if active < rule.param("min_threads") || cpus < 2.0 || wall < rule.param("min_wall_ns") {
        return None;
    }
    let cpu: f64 = all.iter().map(|t| field(t, "cpu_ns")).sum();
    let alloc: f64 = all
        .iter()
        .map(|t| field(t, "alloc_ns").min(field(t, "cpu_ns")))
        .sum();
    let lock: f64 = all.iter().map(|t| field(t, "lock_wait_ns")).sum();
    let compute = cpu - alloc;
    let basis = compute + alloc + lock;
    Some(Efficiency {
        value: ratio(compute, basis),
        threads: active,
        cpus,
        basis,
        parts: vec![("the allocator", alloc), ("lock waits", lock)],
        unattributed: (wall * active.min(cpus) - cpu - lock).max(0.0),
        value_counts_unattributed: false,
    })
}

pub fn parallel_efficiency(rule: &Rule, r: &Value) -> Vec<Finding> {
    let Some(e) = from_states(rule, r).or_else(|| from_cpu_time(rule, r)) else {
        return vec![];
    };
    let mut parts = e.parts.clone();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(cause_name, cause_ns)) = parts.first() else {
        return vec![];
    };
    // When the efficiency counts time the profile cannot attribute and that time outweighs all
    // the known causes together, the loss may be the machine's (other load), not the program's:
    // no finding.
    let known: f64 = parts.iter().map(|p| p.1).sum();
    if cause_ns <= 0.0 || (e.value_counts_unattributed && e.unattributed > known) {
        return vec![];
    }
    let Some(severity) = rule.severity_of(e.value) else {
        return vec![];
    };
    let mut evidence = vec![format!(
        "{} threads on {} CPUs: computation {}, {} of the threads' time",
        e.threads,
        e.cpus,
        fmt_ns(e.value * e.basis),
        fmt_pct(e.value)
    )];
    for (name, ns) in parts.iter().filter(|p| p.1 > 0.0).take(3) {
        evidence.push(format!(
            "{name}: {} ({})",
            fmt_ns(*ns),
            fmt_pct(ratio(*ns, e.basis))
        ));
    }
    if e.unattributed > 0.0 {
        evidence.push(format!(
            "{} more off-CPU, {UNATTRIBUTED_MEANING}",
            fmt_ns(e.unattributed)
        ));
    }
    vec![build(
        rule,
        r,
        severity,
        &[
            ("efficiency", fmt_pct(e.value)),
            ("cause_name", cause_name.to_string()),
            ("cause_share", fmt_pct(ratio(cause_ns, e.basis))),
            ("thread_count", e.threads.to_string()),
            ("cpus", e.cpus.to_string()),
        ],
        evidence,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;
    use crate::findings::test_support::{check_levels, rule};
    use serde_json::json;

    fn severity(findings: &[Finding]) -> Option<Severity> {
        assert!(findings.len() <= 1, "{findings:?}");
        findings.first().map(|f| f.severity)
    }

    /// A report with thread states: `value` efficiency over 4 threads on 4 CPUs for 1 s, the rest of
    /// each thread's time mostly in `category`.
    fn efficient(value: f64, threads: u64, category: &str) -> Value {
        let ts: Vec<Value> = (0..threads)
            .map(|tid| {
                let mut states =
                    json!({"compute_ns": value * 1e9, "blocked_ns": (1.0 - value) * 0.2e9});
                states[format!("{category}_ns")] = json!((1.0 - value) * 0.8e9);
                json!({"tid": tid, "states": states})
            })
            .collect();
        json!({"command": ["./sim"], "threads": ts,
            "parallel_efficiency": {"value": value, "threads": threads, "cpus": 4, "wall_ns": 1_000_000_000u64}})
    }

    #[test]
    fn efficiency_thresholds_and_main_cause() {
        let r = rule("parallel-efficiency");
        check_levels(r, |v| {
            severity(&parallel_efficiency(r, &efficient(v, 4, "lock")))
        });
        let f = &parallel_efficiency(r, &efficient(0.2, 4, "allocator"))[0];
        assert!(f.title.contains("the allocator"), "{}", f.title);
        assert!(f.remedy.contains("--threads 1,2,4"), "{}", f.remedy);
        assert!(parallel_efficiency(r, &efficient(0.1, 1, "lock")).is_empty());
        // States covering only part of the capacity: what they do not explain may be other load.
        let mut partial = efficient(0.2, 4, "lock");
        for t in partial["threads"].as_array_mut().unwrap() {
            t["states"]["lock_ns"] = json!(0.1e9);
            t["states"]["blocked_ns"] = json!(0.0);
        }
        assert!(parallel_efficiency(r, &partial).is_empty());
    }

    fn cpu_threads(wall: f64, threads: &[(f64, f64, f64)]) -> Value {
        let ts: Vec<Value> = threads
            .iter()
            .map(|&(cpu, alloc, lock)| json!({"cpu_ns": cpu, "wall_ns": wall, "alloc_ns": alloc, "lock_wait_ns": lock}))
            .collect();
        json!({"wall_ns": wall, "ncpus": 2, "threads": ts})
    }

    #[test]
    fn efficiency_without_states_uses_cpu_time() {
        let r = rule("parallel-efficiency");
        let wall = 1e9;
        // Two workers that wait half their time on a lock, and a main thread joining them.
        let fighting = cpu_threads(
            wall,
            &[(0.5e9, 0.0, 0.5e9), (0.5e9, 0.0, 0.5e9), (1e6, 0.0, 0.0)],
        );
        let f = parallel_efficiency(r, &fighting);
        assert_eq!(severity(&f), Some(Severity::Medium));
        assert!(f[0].title.contains("lock waits"), "{}", f[0].title);
        // Threads that mostly wait for the lock still take part.
        let waiting = cpu_threads(
            wall,
            &[(0.05e9, 0.0, 0.9e9), (0.05e9, 0.0, 0.9e9), (1e6, 0.0, 0.0)],
        );
        assert_eq!(
            severity(&parallel_efficiency(r, &waiting)),
            Some(Severity::High)
        );
        // Single-threaded work, or two threads both computing, is not a finding.
        assert!(parallel_efficiency(r, &cpu_threads(wall, &[(0.3e9, 0.0, 0.0)])).is_empty());
        let busy = cpu_threads(wall, &[(0.98e9, 0.0, 0.0), (0.97e9, 0.0, 0.0)]);
        assert!(parallel_efficiency(r, &busy).is_empty());
        // Compute threads slowed down by other load on the machine: CPU time far below wall time but
        // no recorded cause.
        let loaded = cpu_threads(
            wall,
            &[(0.25e9, 0.0, 0.0), (0.25e9, 0.0, 0.0), (1e6, 0.0, 0.0)],
        );
        assert!(parallel_efficiency(r, &loaded).is_empty());
        // Too short to judge.
        let short = r.param("min_wall_ns") * 0.5;
        let brief = cpu_threads(short, &[(0.1 * short, 0.0, 0.0), (0.1 * short, 0.0, 0.0)]);
        assert!(parallel_efficiency(r, &brief).is_empty());
    }
}
