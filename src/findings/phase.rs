//! A phase whose allocator calls are much slower per call than in another run of the same phase,
//! with the heap state each began with.

use super::rules::Rule;
use super::view::{array, num, ratio};
use super::{Finding, build};
use crate::util::{fmt_bytes, fmt_count, fmt_ns};
use serde_json::Value;

/// A phase's mean time per call of `function`, when it has enough calls and timed calls.
fn phase_mean(rule: &Rule, phase: &Value, function: &str) -> Option<f64> {
    let f = phase.get("alloc")?.get("functions")?.get(function)?;
    let enough = num(f, &["calls"])? >= rule.param("min_calls")
        && num(f, &["timed_calls"])? >= rule.param("min_timed");
    enough.then(|| num(f, &["mean_ns"])).flatten()
}

fn heap_text(heap: &Value) -> Option<String> {
    if heap.get("glibc").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    Some(format!(
        "{} free chunks ({}, {} of them in fast bins) and {} in use",
        fmt_count(num(heap, &["free_chunks"])? as u64),
        fmt_bytes(num(heap, &["free_bytes"])? as u64),
        fmt_count(num(heap, &["fastbin_chunks"]).unwrap_or(0.0) as u64),
        fmt_bytes(num(heap, &["in_use_bytes"]).unwrap_or(0.0) as u64)
    ))
}

pub fn phase_slowdowns(rule: &Rule, r: &Value) -> Vec<Finding> {
    let phases = array(r, &["phases"]);
    let same_work =
        |a: &Value, b: &Value| a.get("name") == b.get("name") && a.get("depth") == b.get("depth");
    let label = |p: &Value| {
        p.get("label")
            .or_else(|| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let mut found = Vec::new();
    for function in rule.param_strings("functions") {
        for (i, phase) in phases.iter().enumerate() {
            let Some(mean) = phase_mean(rule, phase, &function) else {
                continue;
            };
            // Only the same phase run again (same name and depth) is the same work to compare.
            let baseline = phases
                .iter()
                .enumerate()
                .filter(|(j, o)| *j != i && same_work(o, phase))
                .filter_map(|(_, o)| phase_mean(rule, o, &function).map(|m| (m, o)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((base_mean, base)) = baseline else {
                continue;
            };
            let factor = ratio(mean, base_mean);
            let Some(severity) = rule.severity_of(factor) else {
                continue;
            };
            let heap = phase.get("heap_before").and_then(heap_text);
            let base_heap = base.get("heap_before").and_then(heap_text);
            let heap_state = match (&heap, &base_heap) {
                (Some(h), Some(b)) => format!(
                    "when it began the heap held {h}, versus {b} when \"{}\" began",
                    label(base)
                ),
                (Some(h), None) => format!("when it began the heap held {h}"),
                _ => "no glibc heap snapshot was taken when it began".to_string(),
            };
            let evidence = vec![
                format!(
                    "{function}: {} per call in \"{}\" versus {} in \"{}\"",
                    fmt_ns(mean),
                    label(phase),
                    fmt_ns(base_mean),
                    label(base)
                ),
                heap_state,
            ];
            found.push((
                factor,
                build(
                    rule,
                    r,
                    severity,
                    &[
                        ("function", function.clone()),
                        ("ratio", format!("{factor:.1}")),
                        ("phase", label(phase)),
                        ("baseline", label(base)),
                    ],
                    evidence,
                ),
            ));
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.into_iter().take(3).map(|(_, f)| f).collect()
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

    fn phase(name: &str, label: &str, mean_ns: f64, timed: u64, free_chunks: u64) -> Value {
        json!({"name": name, "label": label, "depth": 0,
            "alloc": {"functions": {"malloc": {"calls": 100_000, "timed_calls": timed, "mean_ns": mean_ns}}},
            "heap_before": {"glibc": true, "free_chunks": free_chunks, "free_bytes": free_chunks * 48,
                "fastbin_chunks": 0, "in_use_bytes": 4096}})
    }

    #[test]
    fn phase_slowdown_thresholds_and_heap_state() {
        let r = rule("allocator-slow-phase");
        let report = |ratio: f64| {
            json!({"phases": [phase("insert", "insert#1", 20.0, 3000, 1),
                              phase("insert", "insert#2", 20.0 * ratio, 3000, 250_000)]})
        };
        check_levels(r, |ratio| severity(&phase_slowdowns(r, &report(ratio))));
        let f = &phase_slowdowns(r, &report(5.0))[0];
        assert!(
            f.title.contains("insert#2") && f.title.contains("insert#1"),
            "{}",
            f.title
        );
        assert!(
            f.evidence.iter().any(|e| e.contains("250,000 free chunks")),
            "{f:?}"
        );
    }

    #[test]
    fn phases_doing_different_work_or_too_few_timed_calls_are_not_compared() {
        let r = rule("allocator-slow-phase");
        let different = json!({"phases": [phase("load", "load", 20.0, 3000, 1),
                                          phase("query", "query", 400.0, 3000, 1)]});
        assert!(phase_slowdowns(r, &different).is_empty());
        let few = r.param("min_timed") as u64 - 1;
        let unsure =
            json!({"phases": [phase("a", "a#1", 20.0, 3000, 1), phase("a", "a#2", 400.0, few, 1)]});
        assert!(phase_slowdowns(r, &unsure).is_empty());
    }
}
