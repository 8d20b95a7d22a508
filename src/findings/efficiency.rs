//! The `parallel-efficiency` finding: the working threads' efficiency (the model's,
//! `analysis::efficiency`) when it is low, with its main cause.

use super::rules::{Rule, SampledShare};
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::states::Category;
use crate::util::{fmt_count, fmt_ns, fmt_pct};

const UNATTRIBUTED_MEANING: &str = "not counted as a cause: the profile cannot attribute it (sleep, I/O or \
     waits it does not intercept, or waiting for a CPU on a busy machine)";

pub fn parallel_efficiency(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(e) = a.efficiency.as_ref() else {
        return vec![];
    };
    // A parallel program's, run long enough for thread start and exit not to decide it.
    if e.cpus < 2 || (e.wall_ns as f64) < rule.param("min_wall_ns") {
        return vec![];
    }
    let mut parts: Vec<(&'static str, f64, Option<Category>)> = e
        .parts
        .iter()
        .map(|&(c, ns)| (c.words(), ns, Some(c)))
        .collect();
    // Time in an rwlock's read side that never waited is the reader count's cache line moving
    // between CPUs, not lock waits (the rwlock-reader-count finding).
    let reader = super::causes::reader_count_lock_ns(a) as f64;
    if reader > 0.0
        && let Some(lock) = parts.iter_mut().find(|p| p.0 == Category::Lock.words())
    {
        let moved = reader.min(lock.1);
        lock.1 -= moved;
        parts.push((super::causes::READER_COUNT_WORDS, moved, None));
    }
    // Waiting for a lock that parks threads with nothing to do (its holder waited for input
    // while the process hardly ran: redis's idle I/O threads on their mutex, held by the main
    // thread in epoll_wait) is waiting for work, not a lock's cost.
    let parked = parked_lock_ns(a);
    if parked > 0.0
        && let Some(lock) = parts.iter_mut().find(|p| p.0 == Category::Lock.words())
    {
        lock.1 = (lock.1 - parked).max(0.0);
    }
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let Some(&(cause_name, cause_ns, cause_category)) = parts.first() else {
        return vec![];
    };
    // When the efficiency counts time the profile cannot attribute and that time outweighs all
    // the known causes together, the loss may be the machine's (other load), not the program's:
    // no finding.
    let known: f64 = parts.iter().map(|p| p.1).sum();
    if cause_ns <= 0.0 || (e.counts_unattributed && e.unattributed_ns > known) {
        return vec![];
    }
    // From few samples the figure may be far from the truth: the severity follows how high it
    // may be (a short rustc process, 5 CPU samples, read high).
    let share = SampledShare::new(e.value, e.samples);
    let Some(severity) = rule.severity_of_sampled(share) else {
        return vec![];
    };
    // Counted as waiting for work, the parked waits may leave nothing to report.
    // (The lock waits are in the basis where it is the threads' time awake and not waiting, or
    // on a CPU or waiting for a lock.)
    use crate::analysis::efficiency::Basis;
    if parked > 0.0 && matches!(e.basis, Basis::KernelStates | Basis::CpuTime) {
        let without = crate::util::ratio(e.compute_ns, (e.basis_ns - parked).max(1.0)).min(1.0);
        if rule
            .severity_of_sampled(SampledShare::new(without, e.samples))
            .is_none()
        {
            return vec![];
        }
    }
    let mut evidence = vec![format!(
        "{} working threads on {} CPUs: computation {}, {} of the threads' time {}{}",
        e.threads,
        e.cpus,
        fmt_ns(e.compute_ns),
        fmt_pct(e.value),
        e.basis.words(),
        if share.high() - share.estimate >= 0.005 {
            format!(
                " (from {} samples, so possibly as much as {}: the severity follows that)",
                fmt_count(share.samples),
                fmt_pct(share.high())
            )
        } else {
            String::new()
        }
    )];
    for (name, ns, _) in parts.iter().filter(|p| p.1 > 0.0).take(3) {
        evidence.push(format!(
            "{name}: {} ({})",
            fmt_ns(*ns),
            fmt_pct(e.part_share(*ns))
        ));
    }
    if e.unattributed_ns > 0.0 {
        evidence.push(format!(
            "{} more off-CPU, {UNATTRIBUTED_MEANING}",
            fmt_ns(e.unattributed_ns)
        ));
    }
    // Where that part happens, named here: a finding that sent the reader to "the other
    // findings" had none beside it on a short run (two threads of an 80 ms program waiting on
    // random()'s lock).
    let place = cause_category.and_then(|c| heaviest_site(a, c));
    if let Some(p) = &place {
        evidence.push(format!("mostly {p}"));
    }
    let place = place.map_or_else(
        || "which the sampled stacks place nowhere in particular".to_string(),
        |p| format!("mostly {p}"),
    );
    vec![
        build(
            rule,
            a,
            severity,
            &[
                ("place", place),
                ("efficiency", fmt_pct(e.value)),
                ("cause_name", cause_name.to_string()),
                ("cause_share", fmt_pct(e.part_share(cause_ns))),
                ("thread_count", e.threads.to_string()),
                ("cpus", e.cpus.to_string()),
            ],
            evidence,
        )
        .uncertain_unless(rule.sampled_at_bound(share)),
    ]
}

/// The sampled time of the working threads' lock waits on locks that park threads with nothing
/// to do (`waitfor::parked_locks`).
fn parked_lock_ns(a: &Analysis) -> f64 {
    let Some(r) = a.states.as_ref() else {
        return 0.0;
    };
    let parked = super::waitfor::parked_locks(a);
    if parked.is_empty() {
        return 0.0;
    }
    r.threads
        .iter()
        .flat_map(|t| t.sites.iter())
        .filter(|s| s.category == Category::Lock)
        .filter(|s| s.lock().is_some_and(|l| parked.contains(&l.object)))
        .map(|s| s.ns as f64)
        .sum()
}

/// The heaviest sampled site of `category` over all threads, in the words of the report's "where
/// threads wait": `waiting on random()'s lock inside random() called from draw (r.c:13)`.
fn heaviest_site(a: &Analysis, category: Category) -> Option<String> {
    let r = a.states.as_ref()?;
    let site = r
        .threads
        .iter()
        .flat_map(|t| t.sites.iter())
        .filter(|s| s.category == category)
        .max_by_key(|s| s.ns)?;
    let from = site
        .user_frame()
        .map(|f| format!(" called from {}", f.display()))
        .unwrap_or_default();
    Some(match site.lock() {
        Some(lock) if category == Category::Lock => {
            format!(
                "waiting on {} inside {}(){from}",
                lock.name,
                site.function()
            )
        }
        _ => format!("inside {}(){from}", site.function()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::states::{CATEGORY_COUNT, StateReport, ThreadStates};
    use crate::analysis::summary::{Summary, ThreadSummary};
    use crate::findings::Severity;
    use crate::findings::rules::Rule;
    use crate::findings::test_support::{check_levels, refresh_efficiency, rule};

    /// The finding on `a` with the model's efficiency worked out from `a` as it is now.
    fn parallel_efficiency(r: &Rule, a: &Analysis) -> Vec<Finding> {
        let mut a = a.clone();
        refresh_efficiency(&mut a);
        super::parallel_efficiency(r, &a)
    }

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
    fn an_efficiency_from_few_samples_is_rated_by_how_high_it_may_be() {
        // 20% computation over 4 threads: high from many samples; from 8 it may be 48% (the
        // loss's lower bound, two standard errors), medium; the evidence says so.
        let r = rule("parallel-efficiency");
        let with_samples = |n: u64| {
            let mut a = efficient(0.2, 4, Category::Lock);
            for t in &mut a.states.as_mut().unwrap().threads {
                t.samples = n;
            }
            a
        };
        assert_eq!(
            severity(&parallel_efficiency(r, &with_samples(1000))),
            Some(Severity::High)
        );
        let few = parallel_efficiency(r, &with_samples(2));
        assert_eq!(severity(&few), Some(Severity::Medium));
        assert!(
            few[0].evidence[0].contains("from 8 samples, so possibly as much as 48.3%"),
            "{:?}",
            few[0].evidence
        );
        // One sample each: it may be anything, but the estimate alone reaches a level, so the
        // least severe one (not hidden by the noise either).
        assert_eq!(
            severity(&parallel_efficiency(r, &with_samples(1))),
            Some(Severity::Medium)
        );
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
