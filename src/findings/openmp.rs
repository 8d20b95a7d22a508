//! OpenMP in its own terms (libgomp's entry points, preload/omp.c): a parallel region whose team
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

/// The members' wait at the closing barrier of a region: load imbalance.
pub fn omp_imbalance(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let wall = a.summary.wall_ns.max(1) as f64;
    a.summary
        .omp_regions
        .iter()
        .filter(|r| {
            r.team() > 1.0
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
