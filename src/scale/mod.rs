//! `stallscope scale`: the same program at several thread counts, timed with `bench`'s machinery
//! (fresh processes, warm-up, interleaved ABBA rounds, medians with confidence intervals), one
//! profiled run per count through `stallscope run`, the lost speedup charged to causes, models
//! fitted to the curve, and remedies measured side by side. docs/SCALE.md.

mod args;
pub mod causes;
#[cfg(test)]
mod classification_tests;
pub mod fit;
mod html;
mod output;
pub mod report;

pub use args::ScaleArgs;

use crate::analysis::Options;
use crate::bench::executor::{Measurement, Output, ProcessExecutor};
use crate::bench::plan::{self, Variant};
use crate::bench::runner::{self, RunCount, RunnerOptions};
use crate::bench::{allocators, profile, progress, results, stats};
use crate::model::Model;
use anyhow::{Result, bail};
use args::Remedy;
use report::{CountRow, FindingNote, Prediction, RemedyResult, ScaleReport, Timed};

/// Set for the program besides `{threads}` and STALLSCOPE_THREADS.
pub const OPENMP_VARIABLE: &str = "OMP_NUM_THREADS";
/// Allocators `--try allocators` preloads.
const TRIED_ALLOCATORS: [&str; 3] = ["jemalloc", "tcmalloc", "mimalloc"];
/// Findings whose remedy `--try allocators` / `--try arenas` measures.
const ALLOCATOR_FINDINGS: [&str; 5] = [
    "small-allocations",
    "library-allocation-hotspot",
    "allocator-time",
    "allocator-slow-phase",
    "cross-thread-frees",
];

pub fn main(args: ScaleArgs) -> Result<i32> {
    validate(&args)?;
    let cpus = available_cpus();
    let counts = if args.threads.is_empty() {
        default_counts(cpus)
    } else {
        args.threads.clone()
    };
    let command = shell_words::join(&args.command);
    let base = plan::build_variants(std::slice::from_ref(&command), &[], &[], &counts)?
        .into_iter()
        .map(with_openmp)
        .collect::<Vec<_>>();
    let remedies = remedy_variants(&base, &args.remedies)?;
    let mut variants = base.clone();
    variants.extend(remedies.iter().flat_map(|r| r.1.iter().cloned()));

    let say = |text: &str| {
        if !args.no_progress {
            eprintln!("stallscope scale: {text}");
        }
    };
    say(&format!(
        "timing {} thread count{} x {} runs{} ({} CPUs)",
        counts.len(),
        if counts.len() == 1 { "" } else { "s" },
        args.runs,
        if remedies.is_empty() {
            String::new()
        } else {
            format!(", with {} remedies", remedies.len())
        },
        cpus
    ));
    let mut bar = progress::for_stderr(args.no_progress);
    let measurements = runner::measure(
        &mut ProcessExecutor,
        &variants,
        RunnerOptions {
            warmup: args.warmup,
            runs: RunCount::Fixed(args.runs),
            output: Output::Discard,
            ignore_failure: false,
        },
        bar.as_mut(),
    )?;

    let mut analyses: Vec<Option<Model>> = Vec::new();
    let mut errors: Vec<Option<String>> = Vec::new();
    for (i, variant) in base.iter().enumerate() {
        if args.no_profile {
            analyses.push(None);
            errors.push(Some("not profiled (--no-profile)".into()));
            continue;
        }
        say(&format!(
            "profiling {} ({}/{})",
            variant.name,
            i + 1,
            base.len()
        ));
        match profile::profiled_analysis(variant, i, Options::default()) {
            Ok(a) => {
                analyses.push(Some(a));
                errors.push(None);
            }
            Err(e) => {
                say(&format!("profiling {} failed: {e:#}", variant.name));
                analyses.push(None);
                errors.push(Some(format!("{e:#}")));
            }
        }
    }

    let report = build_report(
        &args,
        &command,
        cpus,
        &base,
        &measurements,
        &analyses,
        errors,
        &remedies,
    );
    print!("{}", output::terminal(&report));
    if let Some(path) = &args.export_json {
        crate::bench::output::write_file(path, &serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(path) = &args.html {
        crate::bench::output::write_file(path, &html::render(&report))?;
    }
    Ok(0)
}

fn validate(args: &ScaleArgs) -> Result<()> {
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        bail!(
            "--confidence must be between 0 and 1, got {}",
            args.confidence
        );
    }
    if args.noise.is_nan() || args.noise < 0.0 {
        bail!("--noise must be 0 or more, got {}", args.noise);
    }
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if args.threads.contains(&0) {
        bail!("thread counts must be at least 1");
    }
    let mut sorted = args.threads.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != args.threads.len() {
        bail!("each thread count may be given once");
    }
    Ok(())
}

/// The CPUs this process may run on.
pub fn available_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// 1, 2, 4, ... up to the CPUs, and the CPUs themselves.
pub fn default_counts(cpus: u32) -> Vec<u32> {
    let mut counts = Vec::new();
    let mut n = 1;
    while n <= cpus {
        counts.push(n);
        n *= 2;
    }
    if counts.last() != Some(&cpus) {
        counts.push(cpus.max(1));
    }
    counts
}

fn with_openmp(mut v: Variant) -> Variant {
    if let Some(n) = v.threads {
        v.command.env.push((OPENMP_VARIABLE.into(), n.to_string()));
    }
    v
}

/// One remedy: its name, what it sets, and its variants (one per thread count, in the order of
/// the base variants).
type RemedyVariants = (String, Vec<Variant>);

fn remedy_variants(base: &[Variant], asked: &[Remedy]) -> Result<Vec<RemedyVariants>> {
    let mut out = Vec::new();
    let inherited_preload = std::env::var("LD_PRELOAD").ok();
    for remedy in asked {
        match remedy {
            Remedy::Allocators => {
                let names: Vec<String> = TRIED_ALLOCATORS.iter().map(|s| s.to_string()).collect();
                let (found, missing) = allocators::resolve(&names, &allocators::library_dirs());
                for m in &missing {
                    eprintln!("stallscope: warning: {}", m.message());
                }
                for a in found {
                    let Some(library) = &a.preload else { continue };
                    let value = allocators::preload_value(library, inherited_preload.as_deref());
                    out.push((
                        a.name.clone(),
                        derived(base, &a.name, |_| {
                            vec![("LD_PRELOAD".into(), value.clone())]
                        }),
                    ));
                }
            }
            Remedy::Arenas => {
                out.push((
                    "one arena".into(),
                    derived(base, "one arena", |_| {
                        vec![("MALLOC_ARENA_MAX".into(), "1".into())]
                    }),
                ));
                out.push((
                    "arena per thread".into(),
                    derived(base, "arena per thread", |n| {
                        vec![("MALLOC_ARENA_MAX".into(), n.to_string())]
                    }),
                ));
                out.push((
                    "larger tcache".into(),
                    derived(base, "larger tcache", |_| {
                        vec![(
                            "GLIBC_TUNABLES".into(),
                            "glibc.malloc.tcache_count=1024".into(),
                        )]
                    }),
                ));
            }
        }
    }
    if out.is_empty() && asked.contains(&Remedy::Allocators) && asked.len() == 1 {
        bail!("none of the allocators to try is installed");
    }
    Ok(out)
}

fn derived(
    base: &[Variant],
    name: &str,
    env: impl Fn(u32) -> Vec<(String, String)>,
) -> Vec<Variant> {
    base.iter()
        .map(|v| {
            let mut d = v.clone();
            d.command.env.extend(env(v.threads.unwrap_or(1)));
            d.name = format!("{name} / {}", v.name);
            d.allocator = Some(name.to_string());
            d
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    args: &ScaleArgs,
    command: &str,
    cpus: u32,
    base: &[Variant],
    measurements: &[Vec<Measurement>],
    analyses: &[Option<Model>],
    errors: Vec<Option<String>>,
    remedies: &[RemedyVariants],
) -> ScaleReport {
    let confidence = args.confidence;
    let walls = |ms: &[Measurement]| -> Vec<f64> { ms.iter().map(|m| m.wall_ns as f64).collect() };
    let threads_of = |v: &Variant| v.threads.unwrap_or(1);
    // The baseline: the smallest count.
    let b = (0..base.len())
        .min_by_key(|&i| threads_of(&base[i]))
        .unwrap_or(0);
    let costs: Vec<_> = base
        .iter()
        .zip(analyses)
        .map(|(v, a)| a.as_ref().and_then(|a| causes::costs(a, threads_of(v))))
        .collect();
    let timed: Vec<Timed> = base
        .iter()
        .zip(measurements)
        .map(|(v, ms)| {
            let s = results::summarize(v, ms, confidence);
            Timed {
                threads: threads_of(v),
                median_ns: s.median_ns as f64,
                cpu_ns: (s.user_ns + s.system_ns) as f64,
            }
        })
        .collect();

    let mut counts = Vec::new();
    for (i, v) in base.iter().enumerate() {
        let s = results::summarize(v, &measurements[i], confidence);
        let estimate = stats::paired_ratio(
            &walls(&measurements[b]),
            &walls(&measurements[i]),
            confidence,
        );
        let base_threads = timed[b].threads as f64;
        let speedup = base_threads / estimate.ratio;
        let (lost, mut losses) = report::decompose(
            &timed[b],
            costs[b].as_ref(),
            &timed[i],
            costs[i].as_ref(),
            cpus,
        );
        let speedup_ci_high = base_threads / estimate.ci.low;
        let loss_within_noise =
            report::fold_loss_within_noise(timed[i].threads, speedup_ci_high, &mut losses);
        let profile_error = match (&errors[i], &costs[i]) {
            (Some(e), _) => Some(e.clone()),
            (None, None) => Some("the profile has no thread-state samples".into()),
            _ => None,
        };
        counts.push(CountRow {
            threads: timed[i].threads,
            runs: s.runs,
            median_ns: s.median_ns,
            ci_low_ns: s.ci_low_ns,
            ci_high_ns: s.ci_high_ns,
            speedup,
            speedup_ci_low: base_threads / estimate.ci.high,
            speedup_ci_high,
            efficiency: speedup / timed[i].threads as f64,
            cpu_ns: timed[i].cpu_ns as u64,
            lost,
            losses,
            loss_within_noise,
            profile_error,
        });
    }
    counts.sort_by_key(|c| c.threads);

    let points: Vec<(u32, f64)> = counts.iter().map(|c| (c.threads, c.speedup)).collect();
    let fitted = fit::fit(&points, cpus);
    let largest = counts.iter().map(|c| c.threads).max().unwrap_or(1);
    let predictions = prediction_counts(largest.max(cpus))
        .into_iter()
        .filter_map(|n| {
            fitted.predict(n).map(|speedup| Prediction {
                threads: n,
                speedup,
                model: if fitted.usl_coherence.is_some() {
                    "usl"
                } else {
                    "amdahl"
                },
                predicted: true,
            })
        })
        .collect();

    let mut remedy_results = Vec::new();
    let mut offset = base.len();
    for (name, variants) in remedies {
        for (i, v) in variants.iter().enumerate() {
            let estimate = stats::paired_ratio(
                &walls(&measurements[i]),
                &walls(&measurements[offset + i]),
                confidence,
            );
            let verdict = results::verdict(&estimate, args.noise);
            let setting = v
                .command
                .env
                .iter()
                .filter(|(k, _)| k != plan::THREADS_VARIABLE && k != OPENMP_VARIABLE)
                .map(|(k, val)| format!("{k}={val}"))
                .collect::<Vec<_>>()
                .join(" ");
            remedy_results.push(RemedyResult {
                name: name.clone(),
                threads: threads_of(v),
                ratio: estimate.ratio,
                ci_low: estimate.ci.low,
                ci_high: estimate.ci.high,
                verdict,
                summary: results::describe(&estimate, verdict),
                setting,
            });
        }
        offset += variants.len();
    }

    let findings = finding_notes(base, analyses, &remedy_results, cpus);
    let mut report = ScaleReport {
        schema: "stallscope.scale/1",
        command: command.to_string(),
        cpus,
        confidence,
        counts,
        fit: fitted,
        predictions,
        remedies: remedy_results,
        findings,
        verdict: String::new(),
    };
    report.verdict = output::verdict(&report);
    report
}

/// Counts beyond the measured ones to predict: 2x, 4x, 8x the largest.
fn prediction_counts(largest: u32) -> Vec<u32> {
    [2, 4, 8].iter().map(|k| largest.max(1) * k).collect()
}

/// The findings of the profiled run at the largest count that fits the CPUs, each with the
/// measured effect of the remedy it suggests when `--try` measured one.
fn finding_notes(
    base: &[Variant],
    analyses: &[Option<Model>],
    remedies: &[RemedyResult],
    cpus: u32,
) -> Vec<FindingNote> {
    let pick = base
        .iter()
        .zip(analyses)
        .filter(|(v, a)| a.is_some() && v.threads.unwrap_or(1) <= cpus.max(1))
        .max_by_key(|(v, _)| v.threads.unwrap_or(1))
        .or_else(|| base.iter().zip(analyses).find(|(_, a)| a.is_some()));
    let Some((variant, Some(analysis))) = pick else {
        return Vec::new();
    };
    let threads = variant.threads.unwrap_or(1);
    analysis
        .findings
        .iter()
        .map(|f| {
            let measured = if ALLOCATOR_FINDINGS.contains(&f.id.as_str()) {
                remedies
                    .iter()
                    .filter(|r| r.threads == threads)
                    .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
                    .map(|r| {
                        format!(
                            "measured by --try: {} at {} thread{}: {}",
                            r.name,
                            threads,
                            if threads == 1 { "" } else { "s" },
                            r.summary
                        )
                    })
            } else {
                None
            };
            FindingNote {
                id: f.id.clone(),
                threads,
                title: f.title.clone(),
                remedy: f.remedy.clone(),
                measured,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_counts_double_up_to_the_cpus() {
        assert_eq!(default_counts(1), vec![1]);
        assert_eq!(default_counts(2), vec![1, 2]);
        assert_eq!(default_counts(6), vec![1, 2, 4, 6]);
        assert_eq!(default_counts(8), vec![1, 2, 4, 8]);
    }

    #[test]
    fn variants_carry_the_count_in_every_form() {
        let base = plan::build_variants(&["prog -t {threads}".to_string()], &[], &[], &[1, 3])
            .unwrap()
            .into_iter()
            .map(with_openmp)
            .collect::<Vec<_>>();
        assert_eq!(base[1].command.argv, ["prog", "-t", "3"]);
        assert!(
            base[1]
                .command
                .env
                .contains(&("OMP_NUM_THREADS".into(), "3".into()))
        );
        assert!(
            base[1]
                .command
                .env
                .contains(&("STALLSCOPE_THREADS".into(), "3".into()))
        );
        let arenas = remedy_variants(&base, &[Remedy::Arenas]).unwrap();
        assert_eq!(arenas.len(), 3);
        let per_thread = &arenas[1].1[1];
        assert!(
            per_thread
                .command
                .env
                .contains(&("MALLOC_ARENA_MAX".into(), "3".into()))
        );
        assert_eq!(per_thread.command.argv, base[1].command.argv);
    }
}
