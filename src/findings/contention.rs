//! Detectors over waiting: pthread lock contention, locks inside the C library and atomics (from
//! thread-state sampling, docs/STATES.md).

use super::rules::Rule;
use super::view::{array, num, ratio, user_frame_text};
use super::{Finding, build};
use crate::util::{fmt_count, fmt_ns, fmt_pct};
use serde_json::Value;

/// The thread-state categories other than computation, with the words used for them.
pub const CATEGORIES: [(&str, &str); 6] = [
    ("allocator_ns", "the allocator"),
    ("lock_ns", "lock waits"),
    ("atomic_ns", "atomic operations"),
    ("io_ns", "I/O"),
    (
        "blocked_ns",
        "blocking (sleeps, condition variables, joins)",
    ),
    ("kernel_memory_ns", "kernel memory work (page faults, mmap)"),
];

/// The total of a thread's sampled states.
pub fn states_total(states: &Value) -> f64 {
    num(states, &["compute_ns"]).unwrap_or(0.0)
        + CATEGORIES
            .iter()
            .map(|(k, _)| num(states, &[k]).unwrap_or(0.0))
            .sum::<f64>()
}

pub fn pthread_locks(rule: &Rule, r: &Value) -> Vec<Finding> {
    let threads = array(r, &["threads"]);
    let waiter_wall: f64 = threads
        .iter()
        .filter(|t| num(t, &["lock_wait_ns"]).is_some_and(|w| w > 0.0))
        .filter_map(|t| num(t, &["wall_ns"]))
        .sum();
    let mut found: Vec<(f64, Finding)> = Vec::new();
    for lock in array(r, &["locks"]) {
        let wait = num(lock, &["wait_ns"]).unwrap_or(0.0);
        if wait < rule.param("min_wait_ns") {
            continue;
        }
        // The waiting threads' time, so that idle threads (a main thread in join) do not dilute it.
        let share = ratio(wait, waiter_wall).min(1.0);
        let Some(severity) = rule.severity_of(share) else {
            continue;
        };
        let kind = format!(
            "pthread {}",
            lock.get("kind").and_then(Value::as_str).unwrap_or("lock")
        );
        let address = lock
            .get("address")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let mut evidence = vec![format!(
            "{} of waiting in {} contended of {} acquisitions by {} threads (longest wait {})",
            fmt_ns(wait),
            fmt_count(num(lock, &["contended"]).unwrap_or(0.0) as u64),
            fmt_count(num(lock, &["acquisitions"]).unwrap_or(0.0) as u64),
            num(lock, &["threads"]).unwrap_or(0.0),
            fmt_ns(num(lock, &["max_wait_ns"]).unwrap_or(0.0))
        )];
        let mut waiters: Vec<&Value> = array(lock, &["sites"]).iter().collect();
        waiters.sort_by(|a, b| {
            num(b, &["wait_ns"])
                .unwrap_or(0.0)
                .total_cmp(&num(a, &["wait_ns"]).unwrap_or(0.0))
        });
        let max_sites = rule.param("max_sites") as usize;
        for site in waiters.iter().take(max_sites) {
            evidence.push(format!(
                "waiter: {} of the wait at {}",
                fmt_pct(ratio(num(site, &["wait_ns"]).unwrap_or(0.0), wait)),
                user_frame_text(site).unwrap_or_else(|| "an unknown frame".into())
            ));
        }
        for site in array(lock, &["holder_sites"]).iter().take(max_sites) {
            if let Some(user) = user_frame_text(site) {
                evidence.push(format!("holder: the lock was held at {user}"));
            }
        }
        let waiter = waiters
            .first()
            .and_then(|s| user_frame_text(s))
            .unwrap_or_else(|| "an unknown frame".into());
        found.push((
            wait,
            build(
                rule,
                r,
                severity,
                &[
                    ("share", fmt_pct(share)),
                    ("kind", kind),
                    ("address", address),
                    ("waiter", waiter),
                    ("hold", fmt_ns(num(lock, &["hold_ns"]).unwrap_or(0.0))),
                    ("wait", fmt_ns(wait)),
                    (
                        "contended",
                        fmt_count(num(lock, &["contended"]).unwrap_or(0.0) as u64),
                    ),
                ],
                evidence,
            ),
        ));
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.into_iter().take(3).map(|(_, f)| f).collect()
}

/// Sampled time in one state category at one innermost function, over all threads.
struct StateGroup {
    function: String,
    ns: f64,
    samples: f64,
    /// Sampled time of the threads that were seen there.
    threads_ns: f64,
    users: Vec<(String, f64)>,
}

/// Groups the `state_sites[category]` of all threads by function (functions starting with one of
/// `exclude` are left out), largest first.
fn state_groups(r: &Value, category: &str, exclude: &[String]) -> Vec<StateGroup> {
    let mut groups: Vec<StateGroup> = Vec::new();
    for t in array(r, &["threads"]) {
        let Some(states) = t.get("states") else {
            continue;
        };
        let total = states_total(states);
        for site in array(t, &["state_sites", category]) {
            let Some(function) = site.get("function").and_then(Value::as_str) else {
                continue;
            };
            if exclude.iter().any(|p| function.starts_with(p.as_str())) {
                continue;
            }
            let ns = num(site, &["share"]).unwrap_or(0.0) * total;
            let samples = num(site, &["samples"]).unwrap_or(0.0);
            let user = user_frame_text(site).unwrap_or_else(|| "an unknown frame".into());
            let g = match groups.iter_mut().position(|g| g.function == function) {
                Some(i) => &mut groups[i],
                None => {
                    groups.push(StateGroup {
                        function: function.to_string(),
                        ns: 0.0,
                        samples: 0.0,
                        threads_ns: 0.0,
                        users: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.ns += ns;
            g.samples += samples;
            g.threads_ns += total;
            match g.users.iter_mut().find(|u| u.0 == user) {
                Some(u) => u.1 += ns,
                None => g.users.push((user, ns)),
            }
        }
    }
    groups.sort_by(|a, b| b.ns.total_cmp(&a.ns));
    groups
}

/// Findings for sampled time in one category (`lock` inside glibc, `atomic`), one per function.
fn state_findings(rule: &Rule, r: &Value, category: &str, category_ns: &str) -> Vec<Finding> {
    let exclude = rule.param_strings("exclude_prefixes");
    let category_total: f64 = array(r, &["threads"])
        .iter()
        .filter_map(|t| num(t, &["states", category_ns]))
        .sum();
    state_groups(r, category, &exclude)
        .into_iter()
        .take(2)
        .filter(|g| g.samples >= rule.param("min_samples"))
        .filter_map(|mut g| {
            let share = ratio(g.ns, g.threads_ns).min(1.0);
            let severity = rule.severity_of(share)?;
            g.users.sort_by(|a, b| b.1.total_cmp(&a.1));
            let mut evidence = vec![format!(
                "{} sampled in {} ({} samples), {} of the sampled time of the threads seen there; {} in the {category} state over all threads",
                fmt_ns(g.ns),
                g.function,
                fmt_count(g.samples as u64),
                fmt_pct(share),
                fmt_ns(category_total)
            )];
            for (user, ns) in g.users.iter().take(rule.param("max_sites") as usize) {
                evidence.push(format!(
                    "called from {user}: {} of that time",
                    fmt_pct(ratio(*ns, g.ns))
                ));
            }
            Some(build(
                rule,
                r,
                severity,
                &[("share", fmt_pct(share)), ("function", g.function)],
                evidence,
            ))
        })
        .collect()
}

pub fn internal_locks(rule: &Rule, r: &Value) -> Vec<Finding> {
    state_findings(rule, r, "lock", "lock_ns")
}

pub fn atomics(rule: &Rule, r: &Value) -> Vec<Finding> {
    state_findings(rule, r, "atomic", "atomic_ns")
}

#[cfg(test)]
#[path = "contention_tests.rs"]
mod tests;
