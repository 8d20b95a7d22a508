//! `stallscope bench`: isolated, interleaved benchmark runs with confidence intervals.
//!
//! Every run is a fresh process (heap state and caches left by one case cannot leak
//! into another), variants are interleaved in balanced order so a drifting machine
//! biases none of them, and results are medians with distribution-free intervals.

pub(crate) mod allocators;
mod args;
pub(crate) mod executor;
mod order_effect;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod profile;
pub(crate) mod progress;
pub mod results;
pub(crate) mod runner;
pub(crate) mod stats;

pub use args::{BenchArgs, DEFAULT_RUNS};

use anyhow::{Result, bail};
use executor::{Output, ProcessExecutor};
use results::{BenchReport, Settings};
use runner::{RunCount, RunnerOptions};
use std::time::Duration;

pub fn main(args: BenchArgs) -> Result<i32> {
    validate(&args)?;
    let runs = match args.time_budget {
        Some(seconds) => RunCount::Budget(Duration::from_secs_f64(seconds)),
        None => RunCount::Fixed(args.runs.unwrap_or(args::DEFAULT_RUNS)),
    };
    let report = if args.order_effect {
        order_effect_report(&args, runs)?
    } else {
        comparison_report(&args, runs)?
    };

    print!("{}", output::terminal(&report));
    if let Some(path) = &args.export_json {
        output::write_file(path, &output::json(&report)?)?;
    }
    if let Some(path) = &args.export_markdown {
        output::write_file(path, &output::markdown(&report))?;
    }
    if let Some(path) = &args.export_csv {
        output::write_file(path, &output::csv(&report))?;
    }
    Ok(0)
}

fn validate(args: &BenchArgs) -> Result<()> {
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        bail!(
            "--confidence must be between 0 and 1, got {}",
            args.confidence
        );
    }
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        bail!("--alpha must be between 0 and 1, got {}", args.alpha);
    }
    if args.noise.is_nan() || args.noise < 0.0 {
        bail!("--noise must be 0 or more, got {}", args.noise);
    }
    if args.runs == Some(0) {
        bail!("--runs must be at least 1");
    }
    if let Some(seconds) = args.time_budget
        && !(seconds > 0.0 && seconds.is_finite())
    {
        bail!("--time-budget must be a positive number of seconds");
    }
    if args.order_effect {
        if args.commands.len() != 1 {
            bail!("--order-effect takes exactly one benchmark program");
        }
        if !args.allocators.is_empty() || !args.threads.is_empty() || args.profile {
            bail!("--order-effect cannot be combined with --allocators, --threads or --profile");
        }
    }
    Ok(())
}

fn settings(args: &BenchArgs, runs_per_variant: usize) -> Settings {
    Settings {
        runs_per_variant,
        warmup: args.warmup,
        confidence: args.confidence,
        noise: args.noise,
    }
}

fn comparison_report(args: &BenchArgs, runs: RunCount) -> Result<BenchReport> {
    let (allocators, missing_allocators) =
        allocators::resolve(&args.allocators, &allocators::library_dirs());
    for missing in &missing_allocators {
        eprintln!("stallscope: warning: {}", missing.message());
    }
    if !args.allocators.is_empty() && allocators.is_empty() {
        bail!("none of the requested allocators is available");
    }
    let variants = plan::build_variants(&args.commands, &args.names, &allocators, &args.threads)?;
    let options = RunnerOptions {
        warmup: args.warmup,
        runs,
        output: if args.show_output {
            Output::Inherit
        } else {
            Output::Discard
        },
        ignore_failure: args.ignore_failure,
    };
    let mut progress = progress::for_stderr(args.no_progress);
    let measurements =
        runner::measure(&mut ProcessExecutor, &variants, options, progress.as_mut())?;

    let mut summaries: Vec<_> = variants
        .iter()
        .zip(&measurements)
        .map(|(v, m)| results::summarize(v, m, args.confidence))
        .collect();
    if args.profile {
        for (index, (variant, summary)) in variants.iter().zip(&mut summaries).enumerate() {
            match profile::profile_variant(variant, index) {
                Ok(shares) => summary.profile = Some(shares),
                Err(error) => eprintln!(
                    "stallscope: warning: profiling `{}` failed, timing is unaffected: {error:#}",
                    variant.name
                ),
            }
        }
    }
    Ok(BenchReport {
        comparisons: results::compare(&variants, &measurements, args.confidence, args.noise),
        scaling: results::scaling(&variants, &measurements, args.confidence),
        variants: summaries,
        order_effects: Vec::new(),
        missing_allocators,
        settings: settings(args, measurements[0].len()),
    })
}

fn order_effect_report(args: &BenchArgs, runs: RunCount) -> Result<BenchReport> {
    let program = plan::split_command(&args.commands[0])?;
    let options = order_effect::OrderEffectOptions {
        warmup: args.warmup,
        runs,
        alpha: args.alpha,
        noise: args.noise,
    };
    let mut progress = progress::for_stderr(args.no_progress);
    let (_, effects) = order_effect::measure(
        &mut ProcessExecutor,
        &program,
        args.protocol,
        &options,
        progress.as_mut(),
    )?;
    let runs_per_variant = effects.first().map_or(0, |e| e.alone_runs);
    Ok(BenchReport {
        variants: Vec::new(),
        comparisons: Vec::new(),
        scaling: Vec::new(),
        order_effects: effects,
        missing_allocators: Vec::new(),
        settings: settings(args, runs_per_variant),
    })
}
