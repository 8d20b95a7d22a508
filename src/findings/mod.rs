//! Findings: what a profile's figures mean, why, and what to do about it. Each finding is derived
//! from the typed analysis (the figures the report shows, see `crate::analysis`), once per
//! profile. The rules and their thresholds are data (`rules.json`, documented in
//! docs/FINDINGS.md); the detectors here turn a rule and an analysis into findings.

mod alloc;
mod blame;
mod causes;
#[cfg(test)]
mod causes_tests;
mod contention;
mod efficiency;
pub mod openmp;
mod phase;
pub mod rules;
pub mod run_tree;
mod scaling;
#[cfg(test)]
mod test_support;
mod view;
mod waitfor;

use crate::analysis::Analysis;
use crate::util::Style;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    High,
    Medium,
    Low,
    Info,
}

impl Severity {
    pub fn label(self) -> &'static str {
        match self {
            Severity::High => "HIGH",
            Severity::Medium => "MEDIUM",
            Severity::Low => "LOW",
            Severity::Info => "INFO",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable identifier of the rule that produced it, e.g. `small-allocations`.
    pub id: String,
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// The numbers and the user frame that support it.
    pub evidence: Vec<String>,
    /// The cause in plain words.
    pub cause: String,
    /// What to do, with the `stallscope bench` command that measures it where there is one.
    pub remedy: String,
    /// The wall time removing the cause could save, estimated from the concurrency figures
    /// (findings without one did not estimate it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stake_ns: Option<u64>,
    /// Its severity rests on a share from few CPU samples whose lower bound reaches no level
    /// (`rules::sampled_level`): one process may show it by chance, and of many like processes
    /// one will (the by-program list weighs that).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncertain: bool,
    /// What the finding names as its cause (a function, a parallel construct), where another
    /// finding may name the same cause in other words: one cause gets one finding.
    #[serde(skip)]
    pub about: Vec<String>,
}

impl Finding {
    /// Marked uncertain unless its share from CPU samples reached its level at its bound.
    fn uncertain_unless(mut self, at_bound: bool) -> Finding {
        self.uncertain = !at_bound;
        self
    }
}

type Detector = fn(&rules::Rule, &Analysis) -> Vec<Finding>;

/// The detector of each `detector` name used in rules.json.
fn detector(name: &str) -> Option<Detector> {
    Some(match name {
        "small_allocations" => alloc::small_allocations,
        "library_call" => alloc::library_hotspots,
        "allocator_time" => alloc::allocator_time,
        "cross_thread_frees" => alloc::cross_thread_frees,
        "phase_slowdown" => phase::phase_slowdowns,
        "pthread_lock" => contention::pthread_locks,
        "runtime_lock" => contention::runtime_locks,
        "omp_imbalance" => openmp::omp_imbalance,
        "omp_small_regions" => openmp::omp_small_regions,
        "par_ran_serially" => openmp::par_ran_serially,
        "internal_lock" => contention::internal_locks,
        "atomic" => contention::atomics,
        "parallel_efficiency" => efficiency::parallel_efficiency,
        "lock_across_io" => waitfor::lock_across_io,
        "lock_while_asleep" => waitfor::lock_while_asleep,
        "serial_section" => scaling::serial_section,
        "load_imbalance" => scaling::load_imbalance,
        "work_ran_alone" => blame::work_ran_alone,
        "spinning" => scaling::spinning,
        "oversubscription" => scaling::oversubscription,
        "waiting_for_cpu" => scaling::waiting_for_cpu,
        "page_faults" => scaling::page_faults,
        "arena_lock" => scaling::arena_lock,
        "thread_churn" => causes::thread_churn,
        "mostly_serial" => causes::mostly_serial,
        "rwlock_readers" => causes::rwlock_readers,
        "wakeup_storm" => causes::wakeup_storm,
        "taking_turns" => causes::taking_turns,
        "blind_states" => blind_states,
        _ => return None,
    })
}

/// A finding of `rule`, its texts filled from `values` and the bench commands for the profiled
/// command.
fn build(
    rule: &rules::Rule,
    a: &Analysis,
    severity: Severity,
    values: &[(&str, String)],
    evidence: Vec<String>,
) -> Finding {
    let mut values = values.to_vec();
    let server = serves_clients(a);
    values.push((
        "bench_allocators",
        view::bench_allocators(&a.summary.command, server),
    ));
    values.push((
        "bench_threads",
        view::bench_threads(&a.summary.command, server),
    ));
    Finding {
        id: rule.id.clone(),
        severity,
        title: rules::fill(&rule.title, &values),
        evidence,
        cause: rules::fill(&rule.cause, &values),
        remedy: rules::fill(&rule.remedy, &values),
        stake_ns: None,
        uncertain: false,
        about: Vec::new(),
    }
}

/// Where the sampler could not read what the threads waited in (a process made non-dumpable).
fn blind_states(rule: &rules::Rule, a: &Analysis) -> Vec<Finding> {
    let Some(b) = a.blind.filter(|b| b.share() >= rule.param("min_share")) else {
        return vec![];
    };
    let Some(severity) = rule.severity_of(b.share()) else {
        return vec![];
    };
    let evidence = vec![format!(
        "{} of {} off a CPU in samples whose system call /proc refused to show",
        crate::util::fmt_ns(b.blind_ns as f64),
        crate::util::fmt_ns(b.off_cpu_ns as f64)
    )];
    let values = [
        ("from", crate::util::fmt_ns(b.from_ns as f64)),
        ("share", crate::util::fmt_pct(b.share())),
    ];
    vec![build(rule, a, severity, &values, evidence)]
}

/// Whether the process is measured in windows: a window of a process that was already running
/// (`stallscope attach`), or a server: its threads spent most of their lives waiting for the
/// world outside (poll, epoll, accept, reads of sockets: `ThreadStates::input_waits`). Timing it
/// from start to end measures its clients, not it, and an attached process was not started by
/// the profile's command line.
fn serves_clients(a: &Analysis) -> bool {
    if a.summary.attach.is_some() {
        return true;
    }
    a.states.as_ref().is_some_and(|r| {
        let life: u64 = r.threads.iter().map(|t| t.life_ns).sum();
        let waiting: u64 = r
            .threads
            .iter()
            .flat_map(|t| &t.input_waits)
            .map(|&(b, e)| e.saturating_sub(b))
            .sum();
        life > 0 && waiting * 2 > life
    })
}

/// The share of the time off a CPU whose state could not be read from which the findings about
/// waiting are left out.
const BLIND_SHARE: f64 = 0.5;

/// The findings for one analysis (its stages before findings), most severe first.
pub fn evaluate(a: &Analysis) -> Vec<Finding> {
    // Most of the time off a CPU unreadable: no finding rests on what it was.
    let blind = a.blind.is_some_and(|b| b.share() >= BLIND_SHARE);
    let mut findings: Vec<Finding> = rules::rules()
        .iter()
        .filter(|rule| !(blind && rule.off_cpu_states))
        .filter_map(|rule| detector(&rule.detector).map(|d| d(rule, a)))
        .flatten()
        .collect();
    one_finding_per_cause(&mut findings);
    // Most severe first; within a severity, the biggest stake first (stable: rules.json order
    // for equal stakes and findings without one).
    findings.sort_by_key(|f| (f.severity, std::cmp::Reverse(f.stake_ns.unwrap_or(0))));
    findings
}

/// Where a finding names its cause (`about`: the work others waited for) and another names the
/// same cause in its title in the words of its construct (a serial section, a load imbalance,
/// an OpenMP region's imbalance), the construct's finding is kept, as severe as the more severe
/// of the two: one cause, one finding.
fn one_finding_per_cause(findings: &mut Vec<Finding>) {
    let mut drop = vec![false; findings.len()];
    for i in 0..findings.len() {
        let names = findings[i].about.clone();
        let Some(j) = (0..findings.len()).find(|&j| {
            j != i
                && !drop[j]
                && findings[j].about.is_empty()
                && names.iter().any(|n| findings[j].title.contains(n.as_str()))
        }) else {
            continue;
        };
        let severity = findings[i].severity;
        findings[j].severity = findings[j].severity.min(severity);
        drop[i] = true;
    }
    let mut k = drop.into_iter();
    findings.retain(|_| !k.next().unwrap_or(false));
}

/// The findings as terminal text (empty when there are none).
pub fn render_text(findings: &[Finding], style: Style) -> String {
    if findings.is_empty() {
        return String::new();
    }
    format!(
        "{}\n{}\n",
        style.bold("Findings"),
        render_list(findings, style)
    )
}

/// The findings as terminal text, without a heading: one entry per finding.
pub fn render_list(findings: &[Finding], style: Style) -> String {
    let mut out = String::new();
    for f in findings {
        let label = format!("{:<6}", f.severity.label());
        let label = match f.severity {
            Severity::High | Severity::Medium => style.warn(&label),
            Severity::Low | Severity::Info => label,
        };
        out.push_str(&format!("  {label} {} [{}]\n", style.bold(&f.title), f.id));
        for e in &f.evidence {
            out.push_str(&format!("         - {e}\n"));
        }
        out.push_str(&format!("         {} {}\n", style.dim("cause: "), f.cause));
        out.push_str(&format!("         {} {}\n", style.dim("remedy:"), f.remedy));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::phases::{PhaseReport, PhaseSummary};
    use crate::analysis::states::{StateReport, ThreadStates};
    use crate::analysis::summary::{LockSummary, Summary, ThreadSummary};

    #[test]
    fn every_rule_has_a_detector() {
        for rule in rules::rules() {
            assert!(detector(&rule.detector).is_some(), "{}", rule.detector);
        }
    }

    #[test]
    fn empty_and_odd_reports_give_no_finding_and_no_panic() {
        let empty_parts = Analysis {
            summary: Summary {
                threads: vec![ThreadSummary::default()],
                locks: vec![LockSummary::default()],
                alloc_sites: vec![crate::analysis::sites::SiteSummary {
                    user: 99,
                    ..Default::default()
                }],
                ..Summary::default()
            },
            phases: PhaseReport {
                phases: vec![PhaseSummary::default()],
                ..PhaseReport::default()
            },
            states: Some(StateReport {
                threads: vec![ThreadStates::default()],
                ..StateReport::default()
            }),
            ..Analysis::default()
        };
        for a in [Analysis::default(), empty_parts] {
            assert!(evaluate(&a).is_empty(), "{a:?}");
        }
    }

    #[test]
    fn one_cause_named_twice_is_one_finding_in_the_constructs_words() {
        let f = |id: &str, severity: Severity, title: &str, about: &[&str]| Finding {
            id: id.into(),
            severity,
            title: title.into(),
            evidence: vec![],
            cause: String::new(),
            remedy: String::new(),
            stake_ns: None,
            uncertain: false,
            about: about.iter().map(|s| s.to_string()).collect(),
        };
        let mut list = vec![
            f(
                "work-ran-alone",
                Severity::High,
                "work in step",
                &["step", "the region"],
            ),
            f(
                "omp-load-imbalance",
                Severity::Medium,
                "Load imbalance in the region",
                &[],
            ),
            f("spinning", Severity::Low, "Spinning in elsewhere", &[]),
            f("work-ran-alone", Severity::Low, "work in other", &["other"]),
        ];
        one_finding_per_cause(&mut list);
        let ids: Vec<(&str, Severity)> = list.iter().map(|f| (f.id.as_str(), f.severity)).collect();
        assert_eq!(
            ids,
            vec![
                ("omp-load-imbalance", Severity::High),
                ("spinning", Severity::Low),
                ("work-ran-alone", Severity::Low)
            ]
        );
    }

    #[test]
    fn render_text_lists_severity_title_and_remedy() {
        let f = Finding {
            id: "x".into(),
            severity: Severity::High,
            title: "A title".into(),
            evidence: vec!["e1".into()],
            cause: "c".into(),
            remedy: "r".into(),
            stake_ns: None,
            uncertain: false,
            about: Vec::new(),
        };
        let text = render_text(&[f], Style { enabled: false });
        assert!(
            text.starts_with("Findings\n  HIGH   A title [x]\n"),
            "{text}"
        );
        assert!(
            text.contains("- e1") && text.contains("remedy: r"),
            "{text}"
        );
        assert_eq!(render_text(&[], Style { enabled: false }), "");
    }
}
