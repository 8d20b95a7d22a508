//! What no model may say, whatever the profile (one number per concept): a thread
//! spends at most its life in the allocator or waiting for locks, and at most its CPU time (and
//! its allocator calls' measured time) on a CPU in the allocator, and the allocator functions'
//! times add up to no more than the threads' (a phase's to no more than its wall time); no
//! share above 100%; no stake
//! above the wall time; at least as many threads counted as threads listed. Checked on the typed model, so that the fuzz corpus (and
//! the fuzz targets) hold every view to it; `tests/common::assert_invariants` checks the same on
//! every report the integration tests read.

use super::Model;

/// A share may exceed 1 by rounding only.
const SHARE_SLACK: f64 = 1e-9;

/// Every invariant the model breaks, in words (empty: none).
pub fn violations(m: &Model) -> Vec<String> {
    let mut out = Vec::new();
    let s = &m.summary;
    for t in &s.threads {
        if t.alloc_ns > t.wall_ns {
            out.push(format!(
                "thread {}: allocator time {} ns above its life {} ns",
                t.tid, t.alloc_ns, t.wall_ns
            ));
        }
        if t.lock_wait_ns > t.wall_ns {
            out.push(format!(
                "thread {}: lock wait {} ns above its life {} ns",
                t.tid, t.lock_wait_ns, t.wall_ns
            ));
        }
        if t.alloc_ns > 0 && t.alloc_cpu_ns > t.alloc_ns {
            out.push(format!(
                "thread {}: allocator CPU time {} ns above the calls' time {} ns",
                t.tid, t.alloc_cpu_ns, t.alloc_ns
            ));
        }
        if t.alloc_cpu_ns > t.cpu_ns {
            out.push(format!(
                "thread {}: allocator CPU time {} ns above its CPU time {} ns",
                t.tid, t.alloc_cpu_ns, t.cpu_ns
            ));
        }
    }
    // The functions' timed lengths are the threads' allocator time split by function: together
    // no more than it (rounding aside), so never above the threads' lives either.
    let functions = s
        .groups
        .iter()
        .fold(0u64, |a, g| a.saturating_add(g.time_ns));
    let calls_time = s.alloc_ns();
    let slack = calls_time / 1000 + (s.groups.len() + s.threads.len()) as u64;
    if functions > calls_time.saturating_add(slack) {
        out.push(format!(
            "the allocator functions' time {functions} ns above the threads' {calls_time} ns"
        ));
    }
    for ph in &m.analysis.phases.phases {
        let time = ph.fns.iter().fold(0u64, |a, f| a.saturating_add(f.time_ns));
        if time > ph.wall_ns() {
            out.push(format!(
                "phase {}: allocator time {time} ns above its wall time {} ns",
                ph.label,
                ph.wall_ns()
            ));
        }
    }
    if s.thread_count() < s.threads.len() as u64 {
        out.push(format!(
            "{} threads counted, {} listed",
            s.thread_count(),
            s.threads.len()
        ));
    }
    for l in &s.locks {
        if l.threads as u64 > s.thread_count() {
            out.push(format!(
                "lock {:#x}: taken by {} threads of {}",
                l.address,
                l.threads,
                s.thread_count()
            ));
        }
    }
    // Every lock wait the threads' figures count has a row: the timed locks' waits and those
    // seen only by sampling add up to the threads' lock wait (rounding aside).
    let rows = s
        .locks
        .iter()
        .filter(|l| !matches!(l.kind, "omp-region" | "omp-region-site"))
        .map(|l| l.wait_ns)
        .chain(s.unhooked_locks.iter().map(|l| l.wait_ns))
        .fold(0u64, u64::saturating_add);
    let waited = s.lock_wait_ns();
    let slack =
        waited / 100 + 1000 * (s.locks.len() + s.unhooked_locks.len() + s.threads.len()) as u64;
    if rows.abs_diff(waited) > slack {
        out.push(format!(
            "the lock rows' waits {rows} ns, the threads' lock wait {waited} ns"
        ));
    }
    if s.wall_ns > 0 {
        for f in &m.findings {
            if let Some(stake) = f.stake_ns.filter(|&st| st > s.wall_ns) {
                out.push(format!(
                    "finding {}: stake {stake} ns above the wall time {} ns",
                    f.id, s.wall_ns
                ));
            }
        }
    }
    if let Some(w) = &m.analysis.waitfor {
        // Each wait begins on one edge; its parts on the others add up to it.
        let begun: u64 = w.edges.iter().map(|e| e.waits_begun).sum();
        if begun > w.waits {
            out.push(format!(
                "{begun} waits begun on the wait-for edges, {} recorded",
                w.waits
            ));
        }
        for e in &w.edges {
            if e.waits_begun > e.waits || e.woken_tail_ns > e.wait_ns {
                out.push(format!(
                    "a wait-for edge of thread {}: {} waits begun of {}, a tail of {} ns in {} ns",
                    e.waiter, e.waits_begun, e.waits, e.woken_tail_ns, e.wait_ns
                ));
            }
        }
    }
    if let Some(b) = &m.analysis.blame {
        // Charged time is waiting threads' time: the places share it out, each no more than the
        // threads could lose while it ran alone, and what it would save is wall time within that.
        let placed: u64 = b.culprits.iter().map(|c| c.charged_ns).sum();
        if placed > b.charged_ns.saturating_add(b.culprits.len() as u64) {
            out.push(format!(
                "blame: {placed} ns charged to places, {} ns charged in all",
                b.charged_ns
            ));
        }
        for c in &b.culprits {
            if c.gain_ns > c.alone_ns || c.alone_ns > c.work_ns.saturating_add(1) {
                out.push(format!(
                    "blame of {}: gain {} ns, alone {} ns, work {} ns out of order",
                    c.frame.name(),
                    c.gain_ns,
                    c.alone_ns,
                    c.work_ns
                ));
            }
            if s.wall_ns > 0 && c.gain_ns > s.wall_ns {
                out.push(format!(
                    "blame of {}: gain {} ns above the wall time {} ns",
                    c.frame.name(),
                    c.gain_ns,
                    s.wall_ns
                ));
            }
        }
    }
    let mut share = |what: &str, v: f64| {
        if !(0.0..=1.0 + SHARE_SLACK).contains(&v) {
            out.push(format!("{what}: share {v} outside 0-1"));
        }
    };
    share("allocator share of thread time", s.alloc_share_of_life());
    if let Some(r) = &m.states {
        share("parallel efficiency", r.parallel_efficiency());
    }
    if let Some(e) = &m.efficiency {
        share("working threads' efficiency", e.value);
    }
    for r in &s.omp_regions {
        share("an OpenMP region's barrier", r.barrier_share());
    }
    for r in &s.omp_runs {
        share("an OpenMP run's barrier", r.barrier_share);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::summary::ThreadSummary;

    /// A model that breaks each invariant is told so, once per break; the default model breaks none.
    #[test]
    fn each_broken_invariant_is_named() {
        assert!(violations(&Model::default()).is_empty());
        let mut m = Model::default();
        m.analysis.summary.wall_ns = 1_000;
        m.analysis.summary.threads.push(ThreadSummary {
            tid: 7,
            wall_ns: 100,
            cpu_ns: 50,
            alloc_ns: 101,
            alloc_cpu_ns: 51,
            lock_wait_ns: 101,
            ..Default::default()
        });
        m.analysis.summary.threads.push(ThreadSummary {
            tid: 8,
            wall_ns: 100,
            cpu_ns: 50,
            alloc_ns: 10,
            alloc_cpu_ns: 20,
            ..Default::default()
        });
        m.analysis
            .summary
            .groups
            .push(crate::analysis::summary::FnSummary {
                name: "malloc",
                time_ns: 200,
                ..Default::default()
            });
        m.analysis
            .phases
            .phases
            .push(crate::analysis::phases::PhaseSummary {
                label: "p".into(),
                begin_ns: 10,
                end_ns: 20,
                fns: vec![crate::analysis::phases::PhaseFn {
                    time_ns: 11,
                    ..Default::default()
                }],
                ..Default::default()
            });
        m.findings.push(crate::findings::Finding {
            id: "x".into(),
            severity: crate::findings::Severity::Low,
            title: String::new(),
            evidence: Vec::new(),
            cause: String::new(),
            remedy: String::new(),
            stake_ns: Some(1_001),
            uncertain: false,
            about: Vec::new(),
        });
        m.analysis.waitfor = Some(crate::analysis::waitfor::WaitFor {
            waits: 1,
            edges: vec![crate::analysis::waitfor::Edge {
                waits: 2,
                waits_begun: 2,
                wait_ns: 10,
                woken_tail_ns: 11,
                ..Default::default()
            }],
            ..Default::default()
        });
        let v = violations(&m);
        for words in [
            "allocator time",
            "lock wait",
            "allocator CPU time",
            "stake",
            "waits begun",
            "a tail of",
            "the calls' time",
            "functions' time",
            "above its wall time",
        ] {
            assert!(v.iter().any(|l| l.contains(words)), "{words}: {v:?}");
        }
    }
}
