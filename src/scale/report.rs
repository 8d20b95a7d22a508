//! The results of `scale`, and the decomposition of the lost speedup into causes.
//!
//! Accounting in CPU slots: `N` threads for `T(N)` offer `N T(N)` slot-nanoseconds; the work
//! needs `T(1)`. The loss `N T(N) - T(1)` (in speedup units, divided by `T(N)`: `N - S(N)`) is
//! the sum of (a) slots that do not exist (more threads than CPUs), (b) idle slots, charged by
//! the profiled run at `N` to what the threads were doing instead ([`causes::costs`]), and (c)
//! extra CPU time, charged per function to its growth over the one-thread run. Each cause is the
//! excess over the one-thread run, both scaled to the timed runs; what no cause explains is the
//! residual, shown as such.

use super::causes::{Cause, FunctionCpu, RunCosts, cpu_cause};
use super::fit::Fit;
use crate::bench::results::Verdict;
use serde::Serialize;
use std::collections::BTreeMap;

/// A cause is named when it costs at least this share of the ideal speedup; smaller parts stay
/// in the residual. A noisy machine moves a few percent around between runs, and the profiled
/// run has a cost the timed runs lack: stallscope's own thread (wall samples, flushes) takes CPU
/// time from the workers, so on 2 CPUs one worker ends a few percent after the other. At 3% a
/// program that scaled at 96% (CI 1.90-1.98x) was given a "serial section" of 3.1%.
pub const MIN_NAMED_SHARE_OF_IDEAL: f64 = 0.05;
/// CPU time per unit of work of a function must grow by this much to be cache-line contention.
pub const MIN_CACHE_LINE_GROWTH: f64 = 0.10;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Loss {
    /// A cause key (`serial_section`, `cache_line_contention`, ...) or `residual`.
    pub cause: String,
    /// The part of the measured loss, N - S(N), it explains (parts and residual add to 1).
    pub share: f64,
    /// The speedup it costs (share x the measured loss).
    pub speedup: f64,
    /// `function at file:line` in the program, when one is known.
    pub user_frame: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CountRow {
    pub threads: u32,
    pub runs: usize,
    pub median_ns: u64,
    pub ci_low_ns: u64,
    pub ci_high_ns: u64,
    pub speedup: f64,
    pub speedup_ci_low: f64,
    pub speedup_ci_high: f64,
    pub efficiency: f64,
    /// Median user + system time of the timed runs.
    pub cpu_ns: u64,
    /// The lost speedup, N - S(N).
    pub lost: f64,
    pub losses: Vec<Loss>,
    /// The ideal speedup lies inside the speedup's confidence interval: the loss cannot be told
    /// from the timed runs' noise, and no cause is named for it.
    pub loss_within_noise: bool,
    /// The profiled run at this count did not work out (the message), or was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_error: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Prediction {
    pub threads: u32,
    pub speedup: f64,
    pub model: &'static str,
    /// Always true: these counts were not measured.
    pub predicted: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RemedyResult {
    pub name: String,
    pub threads: u32,
    /// Time with the remedy over time without (below 1 is faster).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub verdict: Verdict,
    pub summary: String,
    /// What was changed: the environment of the runs.
    pub setting: String,
}

/// A finding of the profiled run, with the measured effect of the remedies it suggests.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FindingNote {
    pub id: String,
    pub threads: u32,
    pub title: String,
    pub remedy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScaleReport {
    pub schema: &'static str,
    pub command: String,
    pub cpus: u32,
    pub confidence: f64,
    pub counts: Vec<CountRow>,
    pub fit: Fit,
    pub predictions: Vec<Prediction>,
    pub remedies: Vec<RemedyResult>,
    pub findings: Vec<FindingNote>,
    pub verdict: String,
}

/// The timed figures of one count, as the decomposition needs them.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    pub threads: u32,
    pub median_ns: f64,
    pub cpu_ns: f64,
}

/// The losses of `at` against `base` (the one-thread run), from their profiled runs' costs.
pub fn decompose(
    base: &Timed,
    base_costs: Option<&RunCosts>,
    at: &Timed,
    costs: Option<&RunCosts>,
    cpus: u32,
) -> (f64, Vec<Loss>) {
    let n = at.threads as f64;
    let t_n = at.median_ns.max(1.0);
    let lost_ns = n * t_n - base.median_ns;
    let lost = lost_ns / t_n;
    if at.threads <= base.threads || lost_ns <= 0.0 {
        return (lost, Vec::new());
    }
    let mut parts: BTreeMap<(Cause, String), f64> = BTreeMap::new();
    if at.threads > cpus {
        parts.insert(
            (Cause::Oversubscription, String::new()),
            (at.threads - cpus.max(1)) as f64 * t_n,
        );
    }
    if let Some(costs) = costs {
        let scale_n = t_n / costs.wall_ns.max(1) as f64;
        for idle in &costs.idle {
            *parts
                .entry((idle.cause, idle.user_frame.clone()))
                .or_default() += idle.ns * scale_n;
        }
        if let Some(base_costs) = base_costs {
            let scale_1 = base.median_ns / base_costs.wall_ns.max(1) as f64;
            for idle in &base_costs.idle {
                if let Some(part) = parts.get_mut(&(idle.cause, idle.user_frame.clone())) {
                    *part -= idle.ns * scale_1;
                }
            }
        }
        let base_functions = base_costs.map_or(&[][..], |c| &c.functions[..]);
        for f in &costs.functions {
            if let Some((cause, ns)) = cpu_growth(f, at.cpu_ns, base_functions, base.cpu_ns) {
                *parts.entry((cause, f.user_frame.clone())).or_default() += ns;
            }
        }
    }

    let floor = MIN_NAMED_SHARE_OF_IDEAL * n * t_n;
    let mut named: Vec<(Cause, String, f64)> = parts
        .into_iter()
        .filter(|(_, ns)| *ns >= floor)
        .map(|((cause, frame), ns)| (cause, frame, ns))
        .collect();
    // Parts measured on different runs can overlap: never explain more than the loss.
    let total: f64 = named.iter().map(|p| p.2).sum();
    if total > lost_ns {
        for p in &mut named {
            p.2 *= lost_ns / total;
        }
        // What a part costs is at most its share of the measured loss: the floor applies to that
        // (a profiled run's own start-up can look like a serial section the timed runs lack).
        named.retain(|p| p.2 >= floor);
    }
    named.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let explained: f64 = named.iter().map(|p| p.2).sum();
    let mut losses: Vec<Loss> = named
        .into_iter()
        .map(|(cause, frame, ns)| Loss {
            cause: cause.key().to_string(),
            share: ns / lost_ns,
            speedup: ns / t_n,
            user_frame: (!frame.is_empty()).then_some(frame),
        })
        .collect();
    losses.push(Loss {
        cause: "residual".to_string(),
        share: (lost_ns - explained) / lost_ns,
        speedup: (lost_ns - explained) / t_n,
        user_frame: None,
    });
    (lost, losses)
}

/// What a loss within the timed runs' noise is called in the views.
pub const WITHIN_NOISE: &str = "within the timed runs' noise: the ideal lies inside the speedup's confidence interval, so no cause is named";

/// Whether the loss at `threads` is within the timed runs' noise (the ideal speedup lies inside
/// the speedup's interval); if so, the named parts go back to the residual. A few percent of
/// start-up that a profiled run sees as a serial section is not a cause while the measured
/// speedup cannot be told from ideal.
pub fn fold_loss_within_noise(threads: u32, speedup_ci_high: f64, losses: &mut Vec<Loss>) -> bool {
    if speedup_ci_high < threads as f64 || losses.is_empty() {
        return false;
    }
    let speedup: f64 = losses.iter().map(|l| l.speedup).sum();
    losses.clear();
    losses.push(Loss {
        cause: "residual".to_string(),
        share: 1.0,
        speedup,
        user_frame: None,
    });
    true
}

/// A function's CPU time beyond what it took at one thread, and the cause it is charged to.
fn cpu_growth(
    f: &FunctionCpu,
    cpu_ns: f64,
    base: &[FunctionCpu],
    base_cpu_ns: f64,
) -> Option<(Cause, f64)> {
    let now = f.share_of_cpu * cpu_ns;
    let before = base
        .iter()
        .filter(|b| b.function == f.function && b.category == f.category)
        .map(|b| b.share_of_cpu * base_cpu_ns)
        .sum::<f64>();
    let growth = now - before;
    if growth <= 0.0 {
        return None;
    }
    match cpu_cause(f.category) {
        Some(cause) => Some((cause, growth)),
        None if f.user_code && growth >= MIN_CACHE_LINE_GROWTH * before => {
            Some((Cause::CacheLine, growth))
        }
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::states::Category;
    use crate::scale::causes::IdleCost;

    fn timed(threads: u32, median_ms: f64, cpu_ms: f64) -> Timed {
        Timed {
            threads,
            median_ns: median_ms * 1e6,
            cpu_ns: cpu_ms * 1e6,
        }
    }

    fn function(name: &str, share: f64) -> FunctionCpu {
        FunctionCpu {
            function: name.into(),
            category: Category::Compute,
            user_code: true,
            user_frame: format!("{name} at p.c:7"),
            share_of_cpu: share,
        }
    }

    #[test]
    fn a_serial_section_explains_an_amdahl_loss_and_the_parts_add_up() {
        // 100 ms alone, 20 ms of it serial: 60 ms on 2 threads, loss 2 - 100/60 = 0.333.
        let base = timed(1, 100.0, 100.0);
        let at = timed(2, 60.0, 100.0);
        let costs = RunCosts {
            wall_ns: 120_000_000, // the profiled run was slower: its idle time is scaled down
            cpus: 2,
            functions: vec![function("work", 1.0)],
            idle: vec![IdleCost {
                cause: Cause::SerialSection,
                user_frame: "main at p.c:3".into(),
                ns: 40e6,
            }],
        };
        let base_costs = RunCosts {
            wall_ns: 100_000_000,
            cpus: 2,
            functions: vec![function("work", 1.0)],
            idle: Vec::new(),
        };
        let (lost, losses) = decompose(&base, Some(&base_costs), &at, Some(&costs), 2);
        assert!((lost - (2.0 - 100.0 / 60.0)).abs() < 1e-9);
        assert_eq!(losses[0].cause, "serial_section");
        assert_eq!(losses[0].user_frame.as_deref(), Some("main at p.c:3"));
        // 40 ms x 60/120 = 20 ms of the 20 ms lost.
        assert!((losses[0].share - 1.0).abs() < 1e-9, "{losses:?}");
        let total: f64 = losses.iter().map(|l| l.share).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert_eq!(losses.last().unwrap().cause, "residual");
    }

    #[test]
    fn cpu_growth_in_one_user_function_is_cache_line_contention() {
        let base = timed(1, 100.0, 100.0);
        // 2 threads, 80 ms, 160 ms CPU: the work function takes 60% more CPU per unit.
        let at = timed(2, 80.0, 160.0);
        let base_costs = RunCosts {
            wall_ns: 100_000_000,
            cpus: 2,
            functions: vec![function("bump", 1.0)],
            idle: Vec::new(),
        };
        let costs = RunCosts {
            wall_ns: 80_000_000,
            cpus: 2,
            functions: vec![function("bump", 1.0)],
            idle: Vec::new(),
        };
        let (_, losses) = decompose(&base, Some(&base_costs), &at, Some(&costs), 2);
        assert_eq!(losses[0].cause, "cache_line_contention");
        assert_eq!(losses[0].user_frame.as_deref(), Some("bump at p.c:7"));
        // 60 ms of the 60 ms lost (2 x 80 - 100).
        assert!((losses[0].share - 1.0).abs() < 1e-9, "{losses:?}");
        // A library function's growth is not the program's cache line.
        let mut library = costs.clone();
        library.functions[0].user_code = false;
        let (_, losses) = decompose(&base, Some(&base_costs), &at, Some(&library), 2);
        assert_eq!(losses.len(), 1);
        assert_eq!(losses[0].cause, "residual");
    }

    #[test]
    fn near_ideal_scaling_names_nothing_and_oversubscription_is_counted() {
        let base = timed(1, 100.0, 100.0);
        let (_, losses) = decompose(&base, None, &timed(2, 50.5, 101.0), None, 2);
        assert!(losses.iter().all(|l| l.cause == "residual"), "{losses:?}");
        // 4 threads on 2 CPUs: two of the four slots do not exist.
        let (lost, losses) = decompose(&base, None, &timed(4, 51.0, 102.0), None, 2);
        assert!((lost - (4.0 - 100.0 / 51.0)).abs() < 1e-9);
        assert_eq!(losses[0].cause, "oversubscription");
        assert!((losses[0].speedup - 2.0).abs() < 1e-9, "{losses:?}");
    }

    #[test]
    fn a_loss_inside_the_speedups_interval_names_nothing() {
        let parts = || {
            vec![
                Loss {
                    cause: "serial_section".into(),
                    share: 0.8,
                    speedup: 0.08,
                    user_frame: Some("main at p.c:3".into()),
                },
                Loss {
                    cause: "residual".into(),
                    share: 0.2,
                    speedup: 0.02,
                    user_frame: None,
                },
            ]
        };
        let mut losses = parts();
        assert!(fold_loss_within_noise(2, 2.06, &mut losses));
        assert_eq!(losses.len(), 1);
        assert_eq!(losses[0].cause, "residual");
        assert!((losses[0].share - 1.0).abs() < 1e-12);
        assert!((losses[0].speedup - 0.10).abs() < 1e-12);
        // The interval stops short of the ideal: the parts stay.
        let mut losses = parts();
        assert!(!fold_loss_within_noise(2, 1.95, &mut losses));
        assert_eq!(losses, parts());
    }
}
