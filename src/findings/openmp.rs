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
        .filter(|r| r.team() > 1.0 && r.barrier_ns as f64 >= rule.param("min_barrier_ns"))
        .take(2)
        .filter_map(|r| {
            let share = r.barrier_share().min(1.0);
            let severity = rule.severity_of(share)?;
            // Spread evenly, the team would finish when its average member does: the wall time
            // saved is the barrier wait divided among the members.
            let stake = (r.barrier_ns as f64 / r.team()).min(r.wall_ns as f64).min(wall) as u64;
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
                        "{} runs of a team of {} threads, {} in the region; the team waited {} at its closing barrier for the slowest member",
                        fmt_count(r.runs),
                        team_words(r.team()),
                        fmt_ns(r.wall_ns as f64),
                        fmt_ns(r.barrier_ns as f64)
                    ),
                    format!(
                        "longest fork-join cost of one run (its wall less its longest member): {}",
                        fmt_ns(r.max_fork_join_ns as f64)
                    ),
                ],
            );
            Some(super::scaling::with_stake(f, a, stake))
        })
        .collect()
}
