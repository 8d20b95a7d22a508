//! OpenMP in its own terms (libgomp's entry points, preload/omp.c; LLVM's libomp through OMPT,
//! preload/ompt.c): a parallel region whose team
//! waits at its closing barrier for the slowest member is a load imbalance in the user's loop,
//! never a lock or the C library.

use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::util::{fmt_count, fmt_ns, fmt_pct};

/// A team size: `2`, or `3.5` on average when it varied.
fn team_words(team: f64) -> String {
    if team.fract() == 0.0 {
        format!("{team:.0}")
    } else {
        format!("{team:.1}")
    }
}

/// The share of the threads' summed life they spent runnable, waiting for a CPU (0 unknown).
fn runnable_share(a: &Analysis) -> f64 {
    let (Some(r), Some(c)) = (a.states.as_ref(), a.concurrency.as_ref()) else {
        return 0.0;
    };
    let life: u64 = r.threads.iter().map(|t| t.life_ns).sum();
    crate::util::ratio(
        (c.own_runnable_ns + c.other_runnable_ns) as f64,
        life as f64,
    )
}

/// The members' wait at the closing barrier of a region: load imbalance.
pub fn omp_imbalance(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let wall = a.summary.wall_ns.max(1) as f64;
    // A member that waited for a CPU ends late for want of one, not of work (two teams on the
    // CPUs of one: every member's body stretched by the other team's): a barrier wait no larger
    // than the threads' time runnable is that, which oversubscription and waiting-for-cpu name.
    let runnable = runnable_share(a) * rule.param("runnable_explains");
    a.summary
        .omp_regions
        .iter()
        .filter(|r| {
            r.team() > 1.0
                && r.imbalance_share() > runnable
                && r.imbalance_ns() as f64 >= rule.param("min_barrier_ns")
                // A region mostly fork-join is too small (omp-small-regions): its members'
                // uneven ends are the team's wake-up jitter, not uneven work.
                && crate::util::ratio(r.fork_join_ns as f64, r.wall_ns as f64)
                    < rule.param("max_fork_join_share")
        })
        .take(2)
        .filter_map(|r| {
            let share = r.imbalance_share().min(1.0);
            let severity = rule.severity_of(share)?;
            // Spread evenly, the team would finish when its average member does: the wall time
            // saved is the barrier wait divided among the members.
            let stake = (r.imbalance_ns() as f64 / r.team())
                .min(r.wall_ns as f64)
                .min(wall) as u64;
            let f = build(
                rule,
                a,
                severity,
                &[
                    ("share", fmt_pct(share)),
                    ("region", r.words()),
                    ("team", team_words(r.team())),
                ],
                vec![
                    format!(
                        "{} runs of a team of {} threads, {} in the region; the team waited {} at its closing barrier for the slowest member ({} in all, the rest the fork-join)",
                        fmt_count(r.runs),
                        team_words(r.team()),
                        fmt_ns(r.wall_ns as f64),
                        fmt_ns(r.imbalance_ns() as f64),
                        fmt_ns(r.barrier_ns as f64)
                    ),
                    format!(
                        "fork-join cost (each run's wall less its longest member), summed: {}",
                        fmt_ns(r.fork_join_ns as f64)
                    ),
                ],
            );
            Some(super::scaling::with_stake(f, a, stake))
        })
        .collect()
}

/// Regions too small for their fork-join cost: waking and joining the team is a large share of
/// each run.
pub fn omp_small_regions(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let wall = a.summary.wall_ns.max(1) as f64;
    let mut regions: Vec<_> = a
        .summary
        .omp_regions
        .iter()
        .filter(|r| {
            r.team() > 1.0
                && r.runs as f64 >= rule.param("min_runs")
                && r.fork_join_ns as f64 >= rule.param("min_fork_join_ns")
        })
        .collect();
    regions.sort_by_key(|r| std::cmp::Reverse(r.fork_join_ns));
    regions
        .into_iter()
        .take(2)
        .filter_map(|r| {
            let share = crate::util::ratio(r.fork_join_ns as f64, r.wall_ns as f64).min(1.0);
            let severity = rule.severity_of(share)?;
            let stake = (r.fork_join_ns as f64).min(wall) as u64;
            let f = build(
                rule,
                a,
                severity,
                &[
                    ("share", fmt_pct(share)),
                    ("region", r.words()),
                    ("runs", fmt_count(r.runs)),
                    ("mean", fmt_ns(r.wall_ns as f64 / r.runs.max(1) as f64)),
                    ("team", team_words(r.team())),
                ],
                vec![format!(
                    "{} runs, {} in all; fork-join (each run's wall less its longest member) {}",
                    fmt_count(r.runs),
                    fmt_ns(r.wall_ns as f64),
                    fmt_ns(r.fork_join_ns as f64)
                )],
            );
            Some(super::scaling::with_stake(f, a, stake))
        })
        .collect()
}

/// `std::execution::par` that ran on one thread: libstdc++ built the parallel algorithm with its
/// serial backend (no TBB headers at compile time, or `_GLIBCXX_USE_TBB_PAR_BACKEND=0`), which
/// runs it on the calling thread whatever the policy. Known by the backend's own frames in the
/// CPU samples' stacks, never by the program's names.
pub fn par_ran_serially(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let serial_backend = |f: &crate::symbols::Frame| {
        f.function
            .as_deref()
            .is_some_and(|n| n.contains("__pstl::__serial_backend::"))
    };
    let mut ns = 0u64;
    let mut by_user: Vec<(String, String, u64)> = Vec::new();
    for (s, &ci) in a.profile.samples.iter().zip(&r.sample_stacks) {
        let Some(stack) = r.stacks.get(ci as usize).filter(|x| x.on_cpu) else {
            continue;
        };
        let Some(i) = stack.frames.iter().position(serial_backend) else {
            continue;
        };
        ns = ns.saturating_add(s.weight_ns);
        let algorithm = stack.frames[i]
            .function
            .as_deref()
            .map(crate::symbols::short_function)
            .unwrap_or_default();
        let user = crate::symbols::user_frame(&stack.frames);
        let user = stack
            .frames
            .get(user)
            .map(|f| f.short_text())
            .unwrap_or_default();
        match by_user.iter_mut().find(|x| x.0 == user && x.1 == algorithm) {
            Some(x) => x.2 = x.2.saturating_add(s.weight_ns),
            None => by_user.push((user, algorithm, s.weight_ns)),
        }
    }
    let wall = r.wall_ns.max(1);
    if ns < rule.param("min_serial_ns") as u64 || r.cpus < 2 {
        return vec![];
    }
    let share = crate::util::ratio(ns as f64, wall as f64).min(1.0);
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    by_user.sort_by_key(|x| std::cmp::Reverse(x.2));
    let (user, algorithm, _) = by_user[0].clone();
    let evidence = by_user
        .iter()
        .take(3)
        .map(|(u, alg, n)| format!("{} in {alg} called from {u}", fmt_ns(*n as f64)))
        .collect();
    let stake = (ns as f64 * (1.0 - 1.0 / r.cpus.max(1) as f64)).min(wall as f64) as u64;
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("algorithm", algorithm),
            ("user_frame", user),
        ],
        evidence,
    );
    vec![super::scaling::with_stake(f, a, stake)]
}
