//! Parallel efficiency with its main cause: from the sampled thread states when present
//! (docs/STATES.md), else from the threads' CPU time, allocator time and lock waits.

use super::contention::not_compute;
use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::states::{Category, ThreadStates};
use crate::util::{fmt_ns, fmt_pct, ratio};

/// Efficiency with the time of each non-compute part the profile can attribute, and the time it
/// cannot (off-CPU for a reason it does not record).
struct Efficiency {
    value: f64,
    threads: f64,
    cpus: f64,
    /// The time `value` is a share of.
    basis: f64,
    /// The time the parts are shares of: `basis`, or the threads' summed life where the parts
    /// can add up to more than `basis` (blocked threads beyond the CPUs).
    parts_basis: f64,
    parts: Vec<(&'static str, f64)>,
    unattributed: f64,
    /// Whether `value` counts the unattributed time as lost (the sampled states' definition).
    value_counts_unattributed: bool,
}

const UNATTRIBUTED_MEANING: &str = "not counted as a cause: the profile cannot attribute it (sleep, I/O or \
     waits it does not intercept, or waiting for a CPU on a busy machine)";

fn from_states(rule: &Rule, a: &Analysis) -> Option<Efficiency> {
    let r = a.states.as_ref()?;
    let (threads, cpus, wall) = (r.peak_threads as f64, r.cpus as f64, r.wall_ns as f64);
    if threads < rule.param("min_threads") || cpus < 2.0 || wall < rule.param("min_wall_ns") {
        return None;
    }
    // Threads that work: a thread blocked nearly all its sampled time (a main thread waiting in
    // join, an idle pool thread) is waiting for the others, not a cause of their inefficiency.
    let all: Vec<&ThreadStates> = r
        .threads
        .iter()
        .filter(|t| {
            let total = t.sampled_ns() as f64;
            total > 0.0
                && ((t.ns[Category::Blocked.index()] + t.ns[Category::Idle.index()]) as f64)
                    < rule.param("waiting_thread_blocked_share") * total
        })
        .collect();
    let working = all.len() as f64;
    if working < rule.param("min_threads") {
        return None;
    }
    if a.concurrency.is_some() {
        // Threads that worked: on a CPU for a part of their fair share of the CPUs (an idle
        // pool's threads, waiting for requests, are not). Of the share, not of the wall time:
        // 60 threads on 2 CPUs get 3% of it each, and had read as "3 threads".
        let fair = (cpus / working).min(1.0);
        let worked = |t: &&ThreadStates| {
            t.kernel
                .is_some_and(|k| k.exec_ns as f64 >= rule.param("active_cpu_share") * fair * wall)
        };
        let all: Vec<&ThreadStates> = all.iter().copied().filter(worked).collect();
        if (all.len() as f64) < rule.param("min_threads") {
            return None;
        }
        let in_category = |c: Category| all.iter().map(|t| t.ns[c.index()] as f64).sum::<f64>();
        // With the kernel's figures the threads' time is fully split: the basis is the time
        // they were awake and not waiting (a thread waiting in join, for a condition or for
        // input waits for others, never a cause by itself; waiting for a CPU is the machine's
        // or the oversubscription finding's).
        // stallscope's own work (heap snapshots) is left out of the basis too: not the program's.
        let waiting = in_category(Category::Blocked)
            + in_category(Category::Idle)
            + in_category(Category::Runnable)
            + in_category(Category::Profiler);
        let life: f64 = all.iter().map(|t| t.life_ns as f64).sum();
        let capacity = (life - waiting).max(1.0);
        let parts: Vec<(&'static str, f64)> = not_compute()
            .filter(|&c| c != Category::Blocked && c != Category::Idle)
            .map(|c| (c.words(), in_category(c)))
            .collect();
        return Some(Efficiency {
            value: ratio(in_category(Category::Compute), capacity),
            threads: all.len() as f64,
            cpus,
            basis: capacity,
            parts_basis: capacity,
            parts,
            unattributed: 0.0,
            value_counts_unattributed: true,
        });
    }
    let in_category = |c: Category| all.iter().map(|t| t.ns[c.index()] as f64).sum::<f64>();
    let compute = in_category(Category::Compute);
    let capacity = wall * working.min(cpus);
    let parts: Vec<(&'static str, f64)> =
        not_compute().map(|c| (c.words(), in_category(c))).collect();
    let sampled: f64 = all.iter().map(|t| t.sampled_ns() as f64).sum();
    let life: f64 = all.iter().map(|t| t.life_ns as f64).sum();
    let value = ratio(compute, capacity);
    Some(Efficiency {
        value,
        threads: working,
        cpus,
        basis: capacity,
        // More threads than CPUs can be blocked for longer than the CPUs' capacity (16 threads
        // on 2 CPUs showed "blocking 4.921 s (135.4%)"): the parts are shares of their lives.
        parts_basis: life.max(capacity),
        parts,
        unattributed: (capacity - sampled).max(0.0),
        value_counts_unattributed: true,
    })
}

/// Without sampled states: computation (CPU time outside the allocator) against computation plus
/// the allocator and lock waits. Other off-CPU time is left out: from CPU and wall times alone,
/// waiting for a CPU on a loaded machine looks exactly like a program that sleeps.
fn from_cpu_time(rule: &Rule, a: &Analysis) -> Option<Efficiency> {
    let s = &a.summary;
    let (wall, cpus) = (s.wall_ns as f64, s.ncpus as f64);
    // Threads that worked or waited for a lock to work, for a part of their fair share of the
    // CPUs; a main thread waiting in join is not one.
    let busy = s.threads.iter().filter(|t| t.cpu_ns > 0).count().max(1) as f64;
    let fair = (cpus / busy).min(1.0);
    let active = s
        .threads
        .iter()
        .filter(|t| {
            t.cpu_ns as f64 + t.lock_wait_ns as f64 >= rule.param("active_cpu_share") * fair * wall
        })
        .count() as f64;
    if active < rule.param("min_threads") || cpus < 2.0 || wall < rule.param("min_wall_ns") {
        return None;
    }
    let cpu: f64 = s.threads.iter().map(|t| t.cpu_ns as f64).sum();
    let alloc: f64 = s.threads.iter().map(|t| t.alloc_cpu_ns as f64).sum();
    let lock: f64 = s.threads.iter().map(|t| t.lock_wait_ns as f64).sum();
    let compute = cpu - alloc;
    let basis = compute + alloc + lock;
    Some(Efficiency {
        value: ratio(compute, basis),
        threads: active,
        cpus,
        basis,
        parts_basis: basis,
        parts: vec![
            (Category::Allocator.words(), alloc),
            (Category::Lock.words(), lock),
        ],
        unattributed: (wall * active.min(cpus) - cpu - lock).max(0.0),
        value_counts_unattributed: false,
    })
}

pub fn parallel_efficiency(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(e) = from_states(rule, a).or_else(|| from_cpu_time(rule, a)) else {
        return vec![];
    };
    let mut parts = e.parts.clone();
    // Time in an rwlock's read side that never waited is the reader count's cache line moving
    // between CPUs, not lock waits (the rwlock-reader-count finding).
    let reader = super::causes::reader_count_lock_ns(a) as f64;
    if reader > 0.0
        && let Some(lock) = parts.iter_mut().find(|p| p.0 == Category::Lock.words())
    {
        let moved = reader.min(lock.1);
        lock.1 -= moved;
        parts.push((super::causes::READER_COUNT_WORDS, moved));
    }
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
            fmt_pct(ratio(*ns, e.parts_basis))
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
        a,
        severity,
        &[
            ("efficiency", fmt_pct(e.value)),
            ("cause_name", cause_name.to_string()),
            ("cause_share", fmt_pct(ratio(cause_ns, e.parts_basis))),
            ("thread_count", e.threads.to_string()),
            ("cpus", e.cpus.to_string()),
        ],
        evidence,
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::states::{CATEGORY_COUNT, StateReport};
    use crate::analysis::summary::{Summary, ThreadSummary};
    use crate::findings::Severity;
    use crate::findings::test_support::{check_levels, rule};

    fn severity(findings: &[Finding]) -> Option<Severity> {
        assert!(findings.len() <= 1, "{findings:?}");
        findings.first().map(|f| f.severity)
    }

    /// An analysis with thread states: `value` efficiency over 4 threads on 4 CPUs for 1 s, the
    /// rest of each thread's time mostly in `category`.
    fn efficient(value: f64, threads: u64, category: Category) -> Analysis {
        let ts = (0..threads)
            .map(|tid| {
                let mut ns = [0u64; CATEGORY_COUNT];
                ns[Category::Compute.index()] = (value * 1e9) as u64;
                ns[Category::Blocked.index()] = ((1.0 - value) * 0.2e9) as u64;
                ns[category.index()] = ((1.0 - value) * 0.8e9) as u64;
                ThreadStates {
                    tid: tid as u32,
                    ns,
                    ..ThreadStates::default()
                }
            })
            .collect();
        Analysis {
            summary: Summary {
                command: vec!["./sim".into()],
                ..Summary::default()
            },
            states: Some(StateReport {
                threads: ts,
                peak_threads: threads as usize,
                cpus: 4,
                wall_ns: 1_000_000_000,
                ..StateReport::default()
            }),
            ..Analysis::default()
        }
    }

    #[test]
    fn parts_are_shares_of_the_threads_lives_when_more_threads_than_cpus_wait() {
        // 16 threads on 4 CPUs for 1 s, each blocked 70.4% of its life: their blocked time adds
        // up to more than the CPUs' capacity (281.6% of it; once "blocking 4.921 s (135.4%)").
        let r = rule("parallel-efficiency");
        let mut a = efficient(0.12, 16, Category::Blocked);
        for t in &mut a.states.as_mut().unwrap().threads {
            t.life_ns = 1_000_000_000;
        }
        let f = &parallel_efficiency(r, &a)[0];
        let line = f
            .evidence
            .iter()
            .find(|e| e.starts_with("blocking"))
            .expect("the blocked part");
        assert!(line.contains("(70.4%)"), "{line}");
    }

    #[test]
    fn efficiency_thresholds_and_main_cause() {
        let r = rule("parallel-efficiency");
        check_levels(r, |v| {
            severity(&parallel_efficiency(r, &efficient(v, 4, Category::Lock)))
        });
        let f = &parallel_efficiency(r, &efficient(0.2, 4, Category::Allocator))[0];
        assert!(f.title.contains("the allocator"), "{}", f.title);
        assert!(f.remedy.contains("--threads 1,2,4"), "{}", f.remedy);
        assert!(parallel_efficiency(r, &efficient(0.1, 1, Category::Lock)).is_empty());
        // States covering only part of the capacity: what they do not explain may be other load.
        let mut partial = efficient(0.2, 4, Category::Lock);
        for t in &mut partial.states.as_mut().unwrap().threads {
            t.ns[Category::Lock.index()] = 100_000_000;
            t.ns[Category::Blocked.index()] = 0;
        }
        assert!(parallel_efficiency(r, &partial).is_empty());
    }

    fn cpu_threads(wall: f64, threads: &[(f64, f64, f64)]) -> Analysis {
        let ts = threads
            .iter()
            .map(|&(cpu, alloc, lock)| ThreadSummary {
                cpu_ns: cpu as u64,
                wall_ns: wall as u64,
                alloc_ns: alloc as u64,
                alloc_cpu_ns: alloc.min(cpu) as u64,
                lock_wait_ns: lock as u64,
                ..ThreadSummary::default()
            })
            .collect();
        Analysis {
            summary: Summary {
                wall_ns: wall as u64,
                ncpus: 2,
                threads: ts,
                ..Summary::default()
            },
            ..Analysis::default()
        }
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
