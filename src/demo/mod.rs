//! `stallscope demo`: builds the case studies of demos/ with the system C++ compiler and, for
//! each, profiles the slow variant, shows its findings, benchmarks slow against fixed in isolated
//! interleaved processes and prints a verdict: the measured speedup and the share of time that
//! moved. docs/DEMOS.md tells each case's story.

mod build;
mod cases;
mod figures;
mod timing;

use anyhow::{Context, Result};
use cases::{CaseStudy, Moved};
use figures::Profiled;
use std::path::{Path, PathBuf};
use timing::BenchPlan;

use crate::util::{Style, fmt_count, fmt_ns, fmt_pct};

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Case studies to run (default: all of them; see --list)
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// List the case studies, one line each
    #[arg(long)]
    pub list: bool,
    /// Small inputs and few benchmark runs (a quick check, e.g. for tests)
    #[arg(long)]
    pub quick: bool,
    /// Keep the built programs, profiles and benchmark results in DIR (default: a temporary
    /// directory, removed at the end)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn main(args: DemoArgs) -> Result<i32> {
    if args.list {
        for case in &cases::CASES {
            println!("{:<14} {}", case.name, case.summary);
        }
        return Ok(0);
    }
    let selected: Vec<&CaseStudy> = if args.names.is_empty() {
        cases::CASES.iter().collect()
    } else {
        args.names
            .iter()
            .map(|n| {
                cases::find(n).with_context(|| {
                    format!("no case study named `{n}` (`stallscope demo --list` lists them)")
                })
            })
            .collect::<Result<_>>()?
    };
    let cxx = build::compiler();
    build::check_compiler(&cxx)?;
    let (dir, temporary) = match &args.dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("stallscope-demo-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let settings = Settings {
        dir: dir.clone(),
        quick: args.quick,
        keep: !temporary,
        style: Style::for_stdout(),
    };
    let result = run_cases(&cxx, &settings, &selected);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!(
            "programs, profiles and benchmark results kept in {}",
            dir.display()
        );
    }
    result
}

/// How this demo runs: where its files go and how big its inputs are.
struct Settings {
    dir: PathBuf,
    quick: bool,
    /// The directory is the user's (--dir): name the files in it.
    keep: bool,
    style: Style,
}

fn run_cases(cxx: &str, settings: &Settings, selected: &[&CaseStudy]) -> Result<i32> {
    let exes = build::build_all(cxx, &settings.dir, selected)?;
    let mut code = 0;
    for (case, exe) in selected.iter().zip(&exes) {
        if !run_case(case, exe, settings)? {
            code = 1;
        }
    }
    Ok(code)
}

/// Profiles, benchmarks and judges one case; false when its variants disagree on the result.
fn run_case(case: &CaseStudy, exe: &Path, settings: &Settings) -> Result<bool> {
    let (dir, quick, style) = (settings.dir.as_path(), settings.quick, settings.style);
    let args: &[&str] = if quick { &["--quick"] } else { &[] };
    println!(
        "\n{}",
        style.bold(&format!("== {}: {}", case.name, case.summary))
    );

    let mut profiled: Vec<Profiled> = Vec::new();
    for variant in case.profiled() {
        progress(&format!(
            "profiling: stallscope run -- {} {variant}",
            exe.display()
        ));
        profiled.push(figures::profile(exe, variant, args, dir)?);
    }
    print_figures(&profiled, settings.keep);
    let agree = checksums_agree(&profiled);

    for p in profiled
        .iter()
        .filter(|p| case.slow.contains(&p.variant.as_str()))
    {
        let findings = crate::findings::evaluate(&p.report);
        println!("\nFindings for `{}`:", p.variant);
        if findings.is_empty() {
            println!("  (none)");
        } else {
            for line in crate::findings::render_text(&findings, style).lines() {
                println!("  {line}");
            }
        }
    }

    // 6 runs: the fewest whose median interval reaches 95% (96.9%); the whole demo must stay
    // within 3 minutes on 2 cores.
    let plan = if quick {
        BenchPlan { runs: 3, warmup: 0 }
    } else {
        BenchPlan { runs: 6, warmup: 1 }
    };
    progress(&format!(
        "benchmarking: stallscope bench --runs {} {}",
        plan.runs,
        case.variants.join(" ")
    ));
    let json = dir.join(format!("{}-bench.json", case.name));
    let (table, comparisons) = timing::compare(exe, case.variants, args, &plan, &json)?;
    println!(
        "\nBenchmark ({} runs per variant, each a fresh process, interleaved):",
        plan.runs
    );
    for line in table.lines() {
        println!("  {line}");
    }

    let mut order_effects = Vec::new();
    if case.order_effect {
        progress(&format!(
            "benchmarking: stallscope bench --order-effect {}",
            exe.display()
        ));
        let json = dir.join(format!("{}-order-effect.json", case.name));
        let (table, effects) = timing::order_effect(exe, args, &plan, &json)?;
        println!(
            "\nOrder effect (stallscope bench --order-effect, {} runs per side):",
            plan.runs
        );
        for line in table.lines() {
            println!("  {line}");
        }
        order_effects = effects;
    }

    println!("\n{}", style.bold("Verdict"));
    for c in &comparisons {
        println!("  {}", speedup_line(c, case.variants[0]));
    }
    for moved in case.moved {
        for line in moved_lines(*moved, case, &profiled) {
            println!("  {line}");
        }
    }
    for e in order_effects.iter().filter(|e| e.flagged) {
        println!(
            "  `{}` takes {} in the program's sequence against {} alone ({:.2}x, p = {:.1e}): \
             the order of the cases changes what it measures",
            e.case,
            fmt_ns(e.in_sequence_ns),
            fmt_ns(e.alone_ns),
            e.ratio,
            e.p_value
        );
    }
    if !agree {
        println!(
            "  {}",
            style.warn(
                "the variants printed different checksums: they do not compute the same result"
            )
        );
    }
    Ok(agree)
}

/// What the demo is doing now, on stderr, after what it printed so far (stdout may be a pipe).
pub(crate) fn progress(message: &str) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    eprintln!("{message}");
}

fn print_figures(profiled: &[Profiled], name_files: bool) {
    println!("\nProfiles (stallscope run; shares of the threads' time):");
    println!(
        "  {:<12} {:>10} {:>12} {:>10} {:>11} {:>8} {:>8}  checksum",
        "variant", "wall", "alloc calls", "allocator", "lock waits", "off-CPU", "<= 32 B"
    );
    for p in profiled {
        let f = &p.figures;
        println!(
            "  {:<12} {:>10} {:>12} {:>10} {:>11} {:>8} {:>8}  {}",
            p.variant,
            fmt_ns(f.wall_ns),
            fmt_count(f.alloc_calls),
            fmt_pct(f.alloc_share),
            fmt_pct(f.lock_share),
            fmt_pct(f.off_cpu_share),
            fmt_pct(f.small_share),
            p.checksum
                .as_deref()
                .map(|c| c.trim_start_matches("checksum "))
                .unwrap_or("-"),
        );
        if name_files {
            println!("  {:<12} profile: {}", "", p.profile.display());
        }
    }
    println!(
        "  allocator: allocator time / CPU time; lock waits: pthread waits / (CPU + waits); \
         off-CPU: 1 - CPU / life of the worker threads (waiting of any kind, the machine's load included)"
    );
}

fn checksums_agree(profiled: &[Profiled]) -> bool {
    let first = profiled.first().and_then(|p| p.checksum.as_ref());
    first.is_some() && profiled.iter().all(|p| p.checksum.as_ref() == first)
}

/// "fixed: 3.92x faster than slow (95.0% CI 3.70-4.10x)": `ratio` is variant / baseline time.
fn speedup_line(c: &timing::Comparison, baseline: &str) -> String {
    let level = c.ci_level * 100.0;
    let speedup = 1.0 / c.ratio;
    let (low, high) = (1.0 / c.ci_high, 1.0 / c.ci_low);
    match c.verdict.as_str() {
        "faster" => format!(
            "{}: {speedup:.2}x faster than {baseline} ({level:.1}% CI {low:.2}-{high:.2}x)",
            c.variant
        ),
        "slower" => format!(
            "{}: {:.2}x slower than {baseline} ({level:.1}% CI {:.2}-{:.2}x)",
            c.variant, c.ratio, c.ci_low, c.ci_high
        ),
        _ => format!(
            "{}: no measurable difference from {baseline} ({speedup:.2}x, {level:.1}% CI \
             {low:.2}-{high:.2}x)",
            c.variant
        ),
    }
}

fn profile_of<'a>(profiled: &'a [Profiled], variant: &str) -> Option<&'a Profiled> {
    profiled.iter().find(|p| p.variant == variant)
}

/// The figure that moved, from each slow variant to the fix.
fn moved_lines(moved: Moved, case: &CaseStudy, profiled: &[Profiled]) -> Vec<String> {
    let Some(fixed) = profile_of(profiled, case.fixed) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for slow in case.slow.iter().filter_map(|v| profile_of(profiled, v)) {
        let (s, f) = (&slow.figures, &fixed.figures);
        let pair = format!("{} → {}", slow.variant, fixed.variant);
        match moved {
            Moved::AllocatorShare => lines.push(format!(
                "allocator time, share of thread CPU time: {} → {} ({pair}); allocation calls {} → {}",
                fmt_pct(s.alloc_share),
                fmt_pct(f.alloc_share),
                fmt_count(s.alloc_calls),
                fmt_count(f.alloc_calls)
            )),
            Moved::LockWait => {
                let states = match (s.state_lock_share, f.state_lock_share) {
                    (Some(a), Some(b)) => {
                        format!("; lock time in the sampled thread states {} → {}", fmt_pct(a), fmt_pct(b))
                    }
                    _ => String::new(),
                };
                lines.push(format!(
                    "pthread lock waits {} → {}; threads off the CPU {} → {} ({pair}){states}",
                    fmt_pct(s.lock_share),
                    fmt_pct(f.lock_share),
                    fmt_pct(s.off_cpu_share),
                    fmt_pct(f.off_cpu_share)
                ));
            }
            Moved::PhaseMalloc => {
                for p in [slow, fixed] {
                    let means = figures::phase_malloc_means(&p.report, "insert");
                    let text: Vec<String> = means
                        .iter()
                        .map(|(label, ns)| format!("{label} {}", fmt_ns(*ns)))
                        .collect();
                    let ratio = match (means.first(), means.last()) {
                        (Some((_, a)), Some((_, b))) if means.len() > 1 && *a > 0.0 => {
                            format!(" ({:.1}x)", b / a)
                        }
                        _ => String::new(),
                    };
                    let flag = match p.figures.phase_malloc_ratio {
                        Some(r) => format!("; the report flags a phase slowdown of up to {r:.1}x"),
                        None => "; no phase slowdown flagged".to_string(),
                    };
                    lines.push(format!(
                        "malloc per call in phase `insert`, {}: {}{ratio}{flag}",
                        p.variant,
                        text.join(", ")
                    ));
                }
            }
        }
    }
    lines
}
