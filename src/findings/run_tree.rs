//! Findings of a run of several processes as a whole (rules in `run_rules.json`): what no one
//! process's profile can show. Two processes that each run a team of 2 threads on 2 CPUs are
//! each within the machine, and their profiles see only CPUs "taken by other processes"; the
//! process tree together wants 4. The model of the run (`model::run_cpus`) measures the tree's
//! demand for CPUs over time; this turns it into findings.

use super::rules::{self, Rule};
use super::{Finding, Severity};
use crate::util::{fmt_ns, fmt_pct};

/// The process tree's demand for CPUs: threads on a CPU or runnable, summed over the run's
/// processes, in bins of time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeDemand {
    pub cpus: u32,
    pub wall_ns: u64,
    /// The time in which the processes together wanted more CPUs than the machine has (by at
    /// least `min_over_cpus`), at least two of them wanting one and the others together wanting
    /// at least `min_over_cpus` beyond the busiest one: the tree's oversubscription, not one
    /// process's own.
    pub over_ns: u64,
    /// The threads wanting a CPU at once in that time (its 90th percentile).
    pub peak_wanting: f64,
    /// The most processes wanting a CPU at once in that time.
    pub processes: usize,
    /// In that time, summed over the processes: time runnable waiting for a CPU, and time on one.
    pub waiting_ns: u64,
    pub running_ns: u64,
    /// In that time, the threads' demand beyond the CPUs (threads wanting a CPU less the CPUs,
    /// over time): the waiting the tree causes itself, on a machine with nothing else to run.
    pub excess_ns: u64,
}

fn rule(id: &str) -> &'static Rule {
    rules::run_rules()
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("run_rules.json has {id}"))
}

/// How many CPUs beyond the machine's the processes must want together (and the others beyond
/// the busiest one) for a stretch to be the tree's oversubscription.
pub fn over_margin() -> f64 {
    rule("oversubscription-processes").param("min_over_cpus")
}

/// The tree's processes together wanted more CPUs than exist, for a large share of the run.
pub fn oversubscription(d: &TreeDemand) -> Option<Finding> {
    let rule = rule("oversubscription-processes");
    let over_share = d.over_ns as f64 / d.wall_ns.max(1) as f64;
    if d.processes < 2 || over_share < rule.param("min_over_share") {
        return None;
    }
    // What the tree makes its own threads wait, not what other load adds.
    let share = d.excess_ns as f64 / (d.waiting_ns + d.running_ns).max(1) as f64;
    let severity = rule.severity_of(share)?;
    let per_process = (d.cpus as usize / d.processes).max(1);
    let values = [
        ("peak", format!("{:.0}", d.peak_wanting)),
        ("processes", d.processes.to_string()),
        ("cpus", d.cpus.to_string()),
        ("share", fmt_pct(share)),
        ("per_process", per_process.to_string()),
        (
            "per_process_threads",
            if per_process == 1 {
                "1 thread".to_string()
            } else {
                format!("{per_process} threads")
            },
        ),
    ];
    let evidence = vec![
        format!(
            "up to {:.0} threads of {} processes wanted a CPU at once on {} CPUs; the processes together wanted more than the CPUs for {} ({} of the run's wall time), none of them alone",
            d.peak_wanting,
            d.processes,
            d.cpus,
            fmt_ns(d.over_ns as f64),
            fmt_pct(over_share)
        ),
        format!(
            "meanwhile their threads wanted {} of CPU time and the CPUs could give at most {}: {} of it ({}) waited because of each other; in all they waited {} (other load included) and ran {}",
            fmt_ns((d.waiting_ns + d.running_ns) as f64),
            fmt_ns((d.waiting_ns + d.running_ns).saturating_sub(d.excess_ns) as f64),
            fmt_ns(d.excess_ns as f64),
            fmt_pct(share),
            fmt_ns(d.waiting_ns as f64),
            fmt_ns(d.running_ns as f64)
        ),
    ];
    Some(Finding {
        id: rule.id.clone(),
        severity,
        title: rules::fill(&rule.title, &values),
        evidence,
        cause: rules::fill(&rule.cause, &values),
        remedy: rules::fill(&rule.remedy, &values),
        // More threads than CPUs costs switches, caches and spinning, not the CPUs' time: no
        // wall time to win is claimed.
        stake_ns: Some(0),
        uncertain: false,
        about: Vec::new(),
    })
}

/// A process's findings of CPUs "taken by other processes" (`waiting-for-cpu`), where the run's
/// own other processes kept `busy` CPUs busy during its life: they say so, and that the others
/// are siblings, not strangers.
pub fn name_siblings(findings: &mut [Finding], siblings: usize, busy: f64) {
    let rule = rule("siblings-took-the-cpus");
    if siblings == 0 || busy < rule.param("min_busy_cpus") {
        return;
    }
    let values = [
        ("siblings", siblings.to_string()),
        ("busy", format!("{busy:.1}")),
    ];
    for f in findings.iter_mut().filter(|f| f.id == "waiting-for-cpu") {
        f.evidence.push(rules::fill(&rule.title, &values));
        f.cause = format!("{} {}", rules::fill(&rule.cause, &values), f.cause);
        f.remedy = format!("{} {}", rules::fill(&rule.remedy, &values), f.remedy);
        if f.severity == Severity::Info {
            f.severity = Severity::Low;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(over_ns: u64, excess_ns: u64, processes: usize) -> TreeDemand {
        TreeDemand {
            cpus: 2,
            wall_ns: 1_000_000_000,
            over_ns,
            peak_wanting: 4.0,
            processes,
            waiting_ns: 1_000_000_000,
            running_ns: 1_000_000_000,
            excess_ns,
        }
    }

    #[test]
    fn two_teams_of_two_on_two_cpus_are_named_with_their_threads_and_processes() {
        let f = oversubscription(&demand(900_000_000, 1_000_000_000, 2)).expect("a finding");
        assert_eq!(f.id, "oversubscription-processes");
        assert_eq!(f.severity, Severity::High);
        assert!(f.title.contains("4 threads of 2 processes"), "{}", f.title);
        assert!(f.title.contains("on 2 CPUs"), "{}", f.title);
        assert!(f.remedy.contains("OMP_NUM_THREADS=1"), "{}", f.remedy);
        assert!(f.remedy.contains("1 thread each"), "{}", f.remedy);
    }

    #[test]
    fn one_process_or_a_short_overlap_is_no_finding_of_the_tree() {
        assert!(oversubscription(&demand(900_000_000, 1_000_000_000, 1)).is_none());
        assert!(oversubscription(&demand(100_000_000, 1_000_000_000, 2)).is_none());
        assert!(oversubscription(&demand(900_000_000, 10_000_000, 2)).is_none());
    }

    #[test]
    fn cpus_taken_by_siblings_are_said_to_be_the_runs_own() {
        let f = Finding {
            id: "waiting-for-cpu".into(),
            severity: Severity::Info,
            title: "Waiting for a CPU".into(),
            evidence: vec!["runnable, waiting for a CPU taken by other processes".into()],
            cause: "other processes".into(),
            remedy: "a quieter machine".into(),
            stake_ns: Some(0),
            uncertain: false,
            about: Vec::new(),
        };
        let mut quiet = vec![f.clone()];
        name_siblings(&mut quiet, 3, 0.1);
        assert_eq!(quiet[0].evidence.len(), 1);
        let mut busy = vec![f];
        name_siblings(&mut busy, 3, 1.4);
        assert!(busy[0].evidence[1].contains("run's own processes"));
        assert!(busy[0].evidence[1].contains("3 other processes of this run kept 1.4 CPUs"));
    }
}
