//! `stallscope demo`: builds the case studies of demos/ with the system C++ compiler and, for
//! each, profiles the slow variant, shows its findings, benchmarks slow against fixed in isolated
//! interleaved processes and prints a verdict: the measured speedup and the share of time that
//! moved. docs/DEMOS.md tells each case's story.

mod build;
mod cases;
mod corpus;
mod figures;
mod timing;
mod verdict;

use anyhow::{Context, Result};
use cases::CaseStudy;
use figures::Profiled;
use std::path::{Path, PathBuf};
use timing::BenchPlan;

use crate::util::{Style, fmt_ns};

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
    let corpus = corpus::load();
    if args.list {
        for case in &cases::CASES {
            println!("{:<14} {}", case.name, case.summary);
        }
        if !corpus.is_empty() {
            println!("\nReal bugs (tests/real_bugs, docs/CASES.md):");
            for line in corpus::list_lines(&corpus) {
                println!("{line}");
            }
        }
        return Ok(0);
    }
    // The seeds named, and the corpus cases named; without names, the seeds and the corpus
    // cases marked for the demo.
    let mut real: Vec<&corpus::CorpusCase> = Vec::new();
    let selected: Vec<&CaseStudy> = if args.names.is_empty() {
        real.extend(corpus.iter().filter(|c| c.demo));
        cases::CASES.iter().collect()
    } else {
        let mut seeds = Vec::new();
        for n in &args.names {
            if let Some(c) = corpus.iter().find(|c| &c.id == n) {
                real.push(c);
                continue;
            }
            seeds.push(cases::find(n).with_context(|| {
                format!("no case study named `{n}` (`stallscope demo --list` lists them)")
            })?);
        }
        seeds
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
    let mut result = if selected.is_empty() {
        Ok(0)
    } else {
        run_cases(&cxx, &settings, &selected)
    };
    for case in real {
        if result.is_err() {
            break;
        }
        if let Err(e) = corpus::run(case, &settings.dir, settings.quick, settings.style) {
            result = Err(e);
        }
    }
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
    verdict::print_figures(&profiled, settings.keep);
    let agree = verdict::checksums_agree(&profiled);

    for p in profiled
        .iter()
        .filter(|p| case.slow.contains(&p.variant.as_str()))
    {
        let findings = &p.analysis.findings;
        println!("\nFindings for `{}`:", p.variant);
        if findings.is_empty() {
            println!("  (none)");
        } else {
            for line in crate::findings::render_list(findings, style).lines() {
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
        println!("  {}", verdict::speedup_line(c, case.variants[0]));
    }
    for moved in case.moved {
        for line in verdict::moved_lines(*moved, case, &profiled) {
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
