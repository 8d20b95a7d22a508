//! A phase whose allocator calls are much slower per call than in another run of the same phase,
//! with the heap state each began with.

use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::phases::PhaseSummary;
use crate::profile::phases::HeapSnapshot;
use crate::util::{fmt_bytes, fmt_count, fmt_ns, ratio};

/// A phase's mean time per call of `function`, when it has enough calls and timed calls.
fn phase_mean(rule: &Rule, phase: &PhaseSummary, function: &str) -> Option<f64> {
    let f = phase.function(function)?;
    let enough = f.calls as f64 >= rule.param("min_calls")
        && f.timed_calls as f64 >= rule.param("min_timed");
    enough.then(|| f.mean_ns()).flatten()
}

fn heap_text(heap: &HeapSnapshot) -> Option<String> {
    if !heap.glibc {
        return None;
    }
    Some(format!(
        "{} free chunks ({}, {} of them in fast bins) and {} in use",
        fmt_count(heap.all_free_chunks()),
        fmt_bytes(heap.free_bytes),
        fmt_count(heap.fastbin_chunks),
        fmt_bytes(heap.in_use_bytes())
    ))
}

pub fn phase_slowdowns(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let phases = &a.phases.phases;
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
                .filter(|(j, o)| *j != i && o.same_work(phase))
                .filter_map(|(_, o)| phase_mean(rule, o, &function).map(|m| (m, o)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((base_mean, base)) = baseline else {
                continue;
            };
            let factor = ratio(mean, base_mean);
            let Some(severity) = rule.severity_of(factor) else {
                continue;
            };
            let heap = phase.heap_before.as_ref().and_then(heap_text);
            let base_heap = base.heap_before.as_ref().and_then(heap_text);
            let heap_state = match (&heap, &base_heap) {
                (Some(h), Some(b)) => format!(
                    "when it began the heap held {h}, versus {b} when \"{}\" began",
                    base.label
                ),
                (Some(h), None) => format!("when it began the heap held {h}"),
                _ => "no glibc heap snapshot was taken when it began".to_string(),
            };
            let evidence = vec![
                format!(
                    "{function}: {} per call in \"{}\" versus {} in \"{}\"",
                    fmt_ns(mean),
                    phase.label,
                    fmt_ns(base_mean),
                    base.label
                ),
                heap_state,
            ];
            found.push((
                factor,
                build(
                    rule,
                    a,
                    severity,
                    &[
                        ("function", function.clone()),
                        ("ratio", format!("{factor:.1}")),
                        ("phase", phase.label.clone()),
                        ("baseline", base.label.clone()),
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
    use crate::analysis::phases::{PhaseFn, PhaseReport};
    use crate::findings::Severity;
    use crate::findings::test_support::{check_levels, rule};

    fn severity(findings: &[Finding]) -> Option<Severity> {
        assert!(findings.len() <= 1, "{findings:?}");
        findings.first().map(|f| f.severity)
    }

    fn phase(name: &str, label: &str, mean_ns: f64, timed: u64, free_chunks: u64) -> PhaseSummary {
        let calls = 100_000;
        PhaseSummary {
            name: name.into(),
            label: label.into(),
            fns: vec![PhaseFn {
                name: "malloc",
                calls,
                timed_calls: timed,
                time_ns: (mean_ns * calls as f64).round() as u64,
                ..PhaseFn::default()
            }],
            heap_before: Some(HeapSnapshot {
                glibc: true,
                free_chunks,
                free_bytes: free_chunks * 48,
                arena_in_use_bytes: 4096,
                ..HeapSnapshot::default()
            }),
            ..PhaseSummary::default()
        }
    }

    fn with_phases(phases: Vec<PhaseSummary>) -> Analysis {
        Analysis {
            phases: PhaseReport {
                phases,
                ..PhaseReport::default()
            },
            ..Analysis::default()
        }
    }

    #[test]
    fn phase_slowdown_thresholds_and_heap_state() {
        let r = rule("allocator-slow-phase");
        let report = |ratio: f64| {
            with_phases(vec![
                phase("insert", "insert#1", 20.0, 3000, 1),
                phase("insert", "insert#2", 20.0 * ratio, 3000, 250_000),
            ])
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
        let different = with_phases(vec![
            phase("load", "load", 20.0, 3000, 1),
            phase("query", "query", 400.0, 3000, 1),
        ]);
        assert!(phase_slowdowns(r, &different).is_empty());
        let few = r.param("min_timed") as u64 - 1;
        let unsure = with_phases(vec![
            phase("a", "a#1", 20.0, 3000, 1),
            phase("a", "a#2", 400.0, few, 1),
        ]);
        assert!(phase_slowdowns(r, &unsure).is_empty());
        // The same phase on two threads: two arenas, not the same work run again.
        let mut other_thread = phase("a", "a#2", 400.0, 3000, 1);
        other_thread.tid = 7;
        let two_threads = with_phases(vec![phase("a", "a#1", 20.0, 3000, 1), other_thread]);
        assert!(phase_slowdowns(r, &two_threads).is_empty());
    }
}
