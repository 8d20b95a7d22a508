//! Runs the variants: warm-up, then balanced interleaved rounds, one fresh process
//! per run, with the number of rounds fixed before the first timed run.

use super::executor::{Executor, Measurement, Output};
use super::plan::{Variant, balanced_order};
use super::progress::Progress;
use anyhow::{Result, bail};
use std::time::Duration;

/// How many timed rounds (one run of each variant per round).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RunCount {
    Fixed(usize),
    /// As many rounds as fit in the budget, estimated from the warm-up runs.
    Budget(Duration),
}

#[derive(Clone, Copy, Debug)]
pub struct RunnerOptions {
    pub warmup: usize,
    pub runs: RunCount,
    pub output: Output,
    pub ignore_failure: bool,
}

/// Bounds on the rounds a time budget may choose.
const MIN_BUDGET_ROUNDS: usize = 2;
const MAX_BUDGET_ROUNDS: usize = 10_000;

/// Timed measurements per variant; entry `i` of every variant comes from round `i`,
/// so they pair up across variants.
pub fn measure(
    executor: &mut dyn Executor,
    variants: &[Variant],
    options: RunnerOptions,
    progress: &mut dyn Progress,
) -> Result<Vec<Vec<Measurement>>> {
    if variants.is_empty() {
        bail!("nothing to run");
    }
    // A budget needs at least one warm-up round to know how long a round takes.
    let warmup = match options.runs {
        RunCount::Budget(_) => options.warmup.max(1),
        RunCount::Fixed(_) => options.warmup,
    };
    let mut round_time = Duration::ZERO;
    let warmup_order = balanced_order(variants.len(), warmup);
    for (round, order) in warmup_order.iter().enumerate() {
        round_time = Duration::ZERO;
        for &v in order {
            progress.update(round, warmup, &format!("warm-up: {}", variants[v].name));
            let m = run_checked(executor, &variants[v], options)?;
            round_time += Duration::from_nanos(m.wall_ns);
        }
    }

    let rounds = match options.runs {
        RunCount::Fixed(n) => n,
        RunCount::Budget(budget) => rounds_for_budget(budget, round_time),
    };
    if rounds == 0 {
        bail!("at least one run per variant is needed");
    }

    let mut results: Vec<Vec<Measurement>> = vec![Vec::with_capacity(rounds); variants.len()];
    let total = rounds * variants.len();
    let mut done = 0;
    for order in balanced_order(variants.len(), rounds) {
        for v in order {
            progress.update(done, total, &variants[v].name);
            results[v].push(run_checked(executor, &variants[v], options)?);
            done += 1;
        }
    }
    progress.update(total, total, "done");
    progress.finish();
    Ok(results)
}

/// Rounds that fit in the budget, rounded down to an even count so that forward and
/// reversed rounds balance.
pub fn rounds_for_budget(budget: Duration, round_time: Duration) -> usize {
    let fitting = if round_time.is_zero() {
        MAX_BUDGET_ROUNDS
    } else {
        (budget.as_secs_f64() / round_time.as_secs_f64()).floor() as usize
    };
    let even = fitting.clamp(MIN_BUDGET_ROUNDS, MAX_BUDGET_ROUNDS) / 2 * 2;
    even.max(MIN_BUDGET_ROUNDS)
}

fn run_checked(
    executor: &mut dyn Executor,
    variant: &Variant,
    options: RunnerOptions,
) -> Result<Measurement> {
    let m = executor.run(&variant.command, options.output)?;
    if !m.exit.success() && !options.ignore_failure {
        bail!(
            "`{}` failed with {} (use --ignore-failure to measure it anyway)",
            variant.display_command(),
            m.exit
        );
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::executor::{Exit, MockExecutor, measurement_with_wall};
    use crate::bench::plan::build_variants;
    use crate::bench::progress::Silent;

    fn variants(commands: &[&str]) -> Vec<Variant> {
        let commands: Vec<String> = commands.iter().map(|s| s.to_string()).collect();
        build_variants(&commands, &[], &[], &[]).unwrap()
    }

    fn options(warmup: usize, runs: RunCount) -> RunnerOptions {
        RunnerOptions {
            warmup,
            runs,
            output: Output::Discard,
            ignore_failure: false,
        }
    }

    #[test]
    fn warms_up_then_interleaves_and_pairs_rounds() {
        let variants = variants(&["a", "b"]);
        // Each answer encodes which command ran and how many times before.
        let mut executor = MockExecutor::new(|command, previous| {
            let base = if command.argv[0] == "a" { 1_000 } else { 2_000 };
            measurement_with_wall(base + previous as u64)
        });
        let results = measure(
            &mut executor,
            &variants,
            options(1, RunCount::Fixed(4)),
            &mut Silent,
        )
        .unwrap();
        let order: Vec<&str> = executor.calls.iter().map(|c| c.argv[0].as_str()).collect();
        assert_eq!(order, ["a", "b", "a", "b", "b", "a", "a", "b", "b", "a"]);
        // Warm-up results are discarded: the timed runs are calls 1..=4 of each.
        let walls: Vec<u64> = results[0].iter().map(|m| m.wall_ns).collect();
        assert_eq!(walls, [1_001, 1_002, 1_003, 1_004]);
        assert_eq!(results[1].len(), 4);
    }

    #[test]
    fn budget_fixes_rounds_from_warmup_time() {
        let variants = variants(&["a", "b"]);
        // A round takes 10 ms + 30 ms; a 1 s budget fits 25 rounds, rounded to 24.
        let mut executor = MockExecutor::new(|command, _| {
            measurement_with_wall(if command.argv[0] == "a" {
                10_000_000
            } else {
                30_000_000
            })
        });
        let budget = RunCount::Budget(Duration::from_secs(1));
        let results = measure(&mut executor, &variants, options(0, budget), &mut Silent).unwrap();
        assert_eq!(results[0].len(), 24);
        assert_eq!(executor.calls.len(), 2 + 48);
    }

    #[test]
    fn budget_rounds_are_even_and_bounded() {
        let ms = Duration::from_millis;
        assert_eq!(rounds_for_budget(ms(1000), ms(100)), 10);
        assert_eq!(rounds_for_budget(ms(1000), ms(90)), 10);
        assert_eq!(rounds_for_budget(ms(10), ms(100)), MIN_BUDGET_ROUNDS);
        assert_eq!(rounds_for_budget(ms(10), Duration::ZERO), MAX_BUDGET_ROUNDS);
    }

    #[test]
    fn a_failing_command_stops_the_run_unless_ignored() {
        let variants = variants(&["ok", "broken"]);
        let respond = |command: &crate::bench::executor::CommandSpec, _| {
            let mut m = measurement_with_wall(1_000);
            if command.argv[0] == "broken" {
                m.exit = Exit::Code(1);
            }
            m
        };
        let mut executor = MockExecutor::new(respond);
        let error = measure(
            &mut executor,
            &variants,
            options(0, RunCount::Fixed(2)),
            &mut Silent,
        )
        .unwrap_err();
        assert!(error.to_string().contains("broken"), "{error}");
        assert!(error.to_string().contains("exit code 1"), "{error}");

        let mut executor = MockExecutor::new(respond);
        let mut lenient = options(0, RunCount::Fixed(2));
        lenient.ignore_failure = true;
        let results = measure(&mut executor, &variants, lenient, &mut Silent).unwrap();
        assert_eq!(results[1].len(), 2);
    }
}
