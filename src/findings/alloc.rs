//! Detectors over the allocator figures: small allocations, allocation inside library calls,
//! allocator time and cross-thread frees.

use super::rules::Rule;
use super::view::{array, num, ratio, short_function, user_frame_text};
use super::{Finding, build};
use crate::util::{fmt_count, fmt_ns, fmt_pct};
use serde_json::Value;

/// The allocator's share of the threads' CPU time (of their wall time without thread figures).
/// CPU time, because the allocator's timings hardly include time spent waiting for a CPU: on a
/// loaded machine a share of wall time would understate them.
fn allocator_cpu_share(r: &Value) -> f64 {
    let threads = array(r, &["threads"]);
    let field = |t: &Value, k: &str| num(t, &[k]).unwrap_or(0.0);
    let cpu: f64 = threads.iter().map(|t| field(t, "cpu_ns")).sum();
    if cpu > 0.0 {
        ratio(threads.iter().map(|t| field(t, "alloc_ns")).sum(), cpu).min(1.0)
    } else {
        num(r, &["alloc", "share_of_thread_time"]).unwrap_or(0.0)
    }
}

/// Allocator calls and their share of CPU time, if both gates are passed.
fn busy_allocator(rule: &Rule, r: &Value) -> Option<(f64, f64)> {
    let calls = num(r, &["alloc", "total_calls"])?;
    let share = allocator_cpu_share(r);
    (calls >= rule.param("min_calls") && share >= rule.param("min_alloc_share"))
        .then_some((calls, share))
}

/// Allocation requests (the size histogram's total), or all allocator calls without a histogram.
fn allocation_requests(r: &Value, calls: f64) -> f64 {
    let requests: f64 = array(r, &["alloc", "size_histogram"])
        .iter()
        .filter_map(|b| num(b, &["count"]))
        .sum();
    if requests > 0.0 { requests } else { calls }
}

/// Share of the size histogram's requests in buckets that end at or below `max_bytes`.
fn share_at_most(hist: &[Value], max_bytes: f64) -> f64 {
    let count = |b: &Value| num(b, &["count"]).unwrap_or(0.0);
    let total: f64 = hist.iter().map(count).sum();
    let small: f64 = hist
        .iter()
        .filter(|b| num(b, &["max_bytes"]).is_some_and(|m| m <= max_bytes))
        .map(count)
        .sum();
    ratio(small, total)
}

/// Allocation sites grouped by user frame (one frame can reach the allocator by several stacks),
/// keeping sites whose mean request size passes `keep`: (user frame, calls, bytes), most calls first.
fn requests_by_user_frame(r: &Value, keep: impl Fn(f64) -> bool) -> Vec<(String, f64, f64)> {
    let mut by_user: Vec<(String, f64, f64)> = Vec::new();
    for site in array(r, &["alloc", "sites"]) {
        let (Some(calls), Some(bytes)) = (num(site, &["calls"]), num(site, &["bytes"])) else {
            continue;
        };
        if calls <= 0.0 || !keep(bytes / calls) {
            continue;
        }
        let user = user_frame_text(site).unwrap_or_else(|| "an unknown frame".into());
        match by_user.iter_mut().find(|u| u.0 == user) {
            Some(u) => {
                u.1 += calls;
                u.2 += bytes;
            }
            None => by_user.push((user, calls, bytes)),
        }
    }
    by_user.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_user
}

pub fn small_allocations(rule: &Rule, r: &Value) -> Vec<Finding> {
    let Some((calls, alloc_share)) = busy_allocator(rule, r) else {
        return vec![];
    };
    let hist = array(r, &["alloc", "size_histogram"]);
    let max_bytes = rule.param("max_bytes");
    let also_bytes = rule.param("also_bytes");
    let share = share_at_most(hist, max_bytes);
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let mut evidence = vec![
        format!(
            "{} of allocation requests are {also_bytes} bytes or less, {} are {max_bytes} bytes or less",
            fmt_pct(share_at_most(hist, also_bytes)),
            fmt_pct(share)
        ),
        format!(
            "{} allocator calls took {} of the threads' CPU time",
            fmt_count(calls as u64),
            fmt_pct(alloc_share)
        ),
    ];
    let by_user = requests_by_user_frame(r, |mean| mean <= max_bytes);
    let requests = allocation_requests(r, calls);
    for (user, site_calls, bytes) in by_user.iter().take(rule.param("top_sites") as usize) {
        evidence.push(format!(
            "{} of allocation requests ({:.0} bytes on average) come from {user}",
            fmt_pct(ratio(*site_calls, requests).min(1.0)),
            ratio(*bytes, *site_calls)
        ));
    }
    vec![build(
        rule,
        r,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("max_bytes", max_bytes.to_string()),
            ("alloc_share", fmt_pct(alloc_share)),
        ],
        evidence,
    )]
}

/// The library call a site's stack passes through: the outermost frame between the allocator and
/// the user frame that matches a family (the call the user's code made), with the family's name.
fn library_call<'a>(rule: &'a Rule, site: &Value) -> Option<(&'a str, String)> {
    let frames = array(site, &["frames"]);
    let user = site
        .get("user_frame")
        .and_then(Value::as_u64)
        .map_or(frames.len(), |u| u as usize);
    frames[..user.min(frames.len())].iter().rev().find_map(|f| {
        let function = f.get("function")?.as_str()?;
        let family = rule
            .families
            .iter()
            .find(|fam| fam.patterns.iter().any(|p| function.contains(p.as_str())))?;
        Some((family.name.as_str(), short_function(function)))
    })
}

pub fn library_hotspots(rule: &Rule, r: &Value) -> Vec<Finding> {
    let Some((calls, _)) = busy_allocator(rule, r) else {
        return vec![];
    };
    // (family, function, user frame) -> estimated calls and sampled stacks
    let mut groups: Vec<(&str, String, String, f64, f64)> = Vec::new();
    for site in array(r, &["alloc", "sites"]) {
        let Some((family, function)) = library_call(rule, site) else {
            continue;
        };
        let user = user_frame_text(site).unwrap_or_else(|| "an unknown frame".into());
        let site_calls = num(site, &["calls"]).unwrap_or(0.0);
        let samples = num(site, &["samples"]).unwrap_or(0.0);
        match groups
            .iter_mut()
            .find(|g| g.0 == family && g.1 == function && g.2 == user)
        {
            Some(g) => {
                g.3 += site_calls;
                g.4 += samples;
            }
            None => groups.push((family, function, user, site_calls, samples)),
        }
    }
    groups.sort_by(|a, b| b.3.total_cmp(&a.3));
    let requests = allocation_requests(r, calls);
    groups
        .into_iter()
        .take(3)
        .filter_map(|(family, function, user, group_calls, samples)| {
            let share = ratio(group_calls, requests).min(1.0);
            let severity = rule.severity_of(share)?;
            let evidence = vec![
                format!(
                    "about {} of {} allocation requests ({}) pass through {function} ({family}), estimated from {} sampled stacks",
                    fmt_count(group_calls as u64),
                    fmt_count(requests as u64),
                    fmt_pct(share),
                    fmt_count(samples as u64)
                ),
                format!("the call is made from {user}"),
                "allocations per call of the library function are not known: the profile counts allocator calls, not library calls".to_string(),
            ];
            Some(build(
                rule,
                r,
                severity,
                &[
                    ("family", family.to_string()),
                    ("function", function),
                    ("user_frame", user),
                    ("share", fmt_pct(share)),
                ],
                evidence,
            ))
        })
        .collect()
}

pub fn allocator_time(rule: &Rule, r: &Value) -> Vec<Finding> {
    let (min_calls, min_time) = (rule.param("min_calls"), rule.param("min_time_ns"));
    let calls = num(r, &["alloc", "total_calls"]).unwrap_or(0.0);
    let time = num(r, &["alloc", "time_ns"]).unwrap_or(0.0);
    let threads = array(r, &["threads"]);
    let wall_share = num(r, &["alloc", "share_of_thread_time"]).unwrap_or(0.0);
    let cpu_share = allocator_cpu_share(r);
    let global = if calls >= min_calls && time >= min_time {
        cpu_share
    } else {
        0.0
    };
    // The thread that spends the largest share of its CPU time in the allocator, among busy ones.
    let worst = threads
        .iter()
        .filter_map(|t| {
            let ns = num(t, &["alloc_ns"])?;
            let n = num(t, &["alloc_calls"])?;
            let share = ratio(ns, num(t, &["cpu_ns"])?).min(1.0);
            (n >= min_calls && ns >= min_time).then_some((t, share, ns, n))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let global_severity = rule.severity_of(global);
    let thread_severity = worst.and_then(|w| rule.severity_of(w.1));
    let Some(severity) = global_severity.into_iter().chain(thread_severity).min() else {
        return vec![];
    };
    let mut evidence = vec![format!(
        "{} allocator calls took {}: {} of the threads' CPU time, {} of their wall time",
        fmt_count(calls as u64),
        fmt_ns(time),
        fmt_pct(cpu_share),
        fmt_pct(wall_share)
    )];
    let (share, scope) = match worst {
        Some((t, share, ns, n)) => {
            let tid = num(t, &["tid"]).unwrap_or(0.0) as u64;
            evidence.push(format!(
                "thread {tid} spent {} of its CPU time in {} allocator calls ({})",
                fmt_pct(share),
                fmt_count(n as u64),
                fmt_ns(ns)
            ));
            let thread_worse = match (thread_severity, global_severity) {
                (Some(t), Some(g)) => t < g,
                (t, g) => t.is_some() && g.is_none(),
            };
            if thread_worse {
                (share, format!("thread {tid}'s CPU time"))
            } else {
                (global, "the threads' CPU time".to_string())
            }
        }
        None => (global, "the threads' CPU time".to_string()),
    };
    let requests = allocation_requests(r, calls);
    if let Some((user, site_calls, _)) = requests_by_user_frame(r, |_| true).first() {
        evidence.push(format!(
            "the most frequent caller is {user} with {} of allocation requests",
            fmt_pct(ratio(*site_calls, requests).min(1.0))
        ));
    }
    let mut functions: Vec<(&String, f64, f64)> = r["alloc"]["functions"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(name, f)| Some((name, num(f, &["time_ns"])?, num(f, &["calls"])?)))
                .filter(|f| f.1 > 0.0)
                .collect()
        })
        .unwrap_or_default();
    functions.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (name, ns, n) in functions.iter().take(2) {
        evidence.push(format!(
            "{name}: {} calls, {} in total, {} per call",
            fmt_count(*n as u64),
            fmt_ns(*ns),
            fmt_ns(ratio(*ns, *n))
        ));
    }
    vec![build(
        rule,
        r,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("scope", scope),
            ("calls", fmt_count(calls as u64)),
            ("time", fmt_ns(time)),
        ],
        evidence,
    )]
}

pub fn cross_thread_frees(rule: &Rule, r: &Value) -> Vec<Finding> {
    let (Some(calls), Some(share)) = (
        num(r, &["alloc", "cross_thread_frees", "calls"]),
        num(r, &["alloc", "cross_thread_frees", "share"]),
    ) else {
        return vec![];
    };
    if calls < rule.param("min_calls") {
        return vec![];
    }
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let evidence = vec![format!(
        "{} frees ({} of all frees) released memory allocated by another thread",
        fmt_count(calls as u64),
        fmt_pct(share)
    )];
    vec![build(
        rule,
        r,
        severity,
        &[("share", fmt_pct(share))],
        evidence,
    )]
}

#[cfg(test)]
#[path = "alloc_tests.rs"]
mod tests;
