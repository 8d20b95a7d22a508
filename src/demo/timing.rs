//! Slow against fixed in isolated, interleaved processes: `stallscope bench` (the current
//! executable) with its JSON export, so the demo measures exactly what users would.

use crate::bench::results;
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};

pub struct BenchPlan {
    pub runs: usize,
    pub warmup: usize,
}

/// One variant against the baseline (the first command): `ratio` = variant / baseline time.
pub struct Comparison {
    pub variant: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub ci_level: f64,
    pub verdict: results::Verdict,
}

pub struct OrderEffect {
    pub case: String,
    pub alone_ns: f64,
    pub in_sequence_ns: f64,
    pub ratio: f64,
    pub p_value: f64,
    pub flagged: bool,
}

/// A word for `bench`'s shell-like command splitting.
fn quoted(path: &Path) -> String {
    shell_words::quote(&path.display().to_string()).into_owned()
}

/// The parts of bench's JSON export (its own typed report, `bench::results`) the demo reads.
#[derive(serde::Deserialize)]
struct BenchExport {
    comparisons: Option<Vec<results::Comparison>>,
    order_effects: Option<Vec<results::OrderEffect>>,
}

fn run_bench(args: Vec<String>, json_path: &Path) -> Result<(String, BenchExport)> {
    let _ = std::fs::remove_file(json_path);
    let me = std::env::current_exe().context("cannot find the stallscope executable")?;
    let out = Command::new(me)
        .arg("bench")
        .args(&args)
        .arg("--no-progress")
        .arg("--export-json")
        .arg(json_path)
        .stdin(Stdio::null())
        .output()
        .context("starting `stallscope bench`")?;
    if !out.status.success() {
        bail!(
            "`stallscope bench` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(json_path)
        .with_context(|| format!("reading {}", json_path.display()))?;
    let json: BenchExport = serde_json::from_str(&text).context("bench JSON")?;
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), json))
}

/// `stallscope bench -n V1 -n V2 ... 'EXE V1 ARGS' 'EXE V2 ARGS' ...`; returns bench's table and
/// the comparisons with the first variant.
pub fn compare(
    exe: &Path,
    variants: &[&str],
    args: &[&str],
    plan: &BenchPlan,
    json_path: &Path,
) -> Result<(String, Vec<Comparison>)> {
    let mut bench_args = vec![
        "--runs".to_string(),
        plan.runs.to_string(),
        "--warmup".to_string(),
        plan.warmup.to_string(),
    ];
    for v in variants {
        bench_args.extend(["--name".to_string(), v.to_string()]);
    }
    for v in variants {
        let mut words = vec![quoted(exe), v.to_string()];
        words.extend(args.iter().map(|a| a.to_string()));
        bench_args.push(words.join(" "));
    }
    let (table, json) = run_bench(bench_args, json_path)?;
    let comparisons = json
        .comparisons
        .context("bench JSON has no comparisons")?
        .into_iter()
        .map(|c| Comparison {
            variant: c.variant,
            ratio: c.ratio,
            ci_low: c.ci_low,
            ci_high: c.ci_high,
            ci_level: c.ci_level,
            verdict: c.verdict,
        })
        .collect();
    Ok((table, comparisons))
}

/// `stallscope bench --order-effect --protocol stallscope 'EXE ARGS'`.
pub fn order_effect(
    exe: &Path,
    args: &[&str],
    plan: &BenchPlan,
    json_path: &Path,
) -> Result<(String, Vec<OrderEffect>)> {
    let mut words = vec![quoted(exe)];
    words.extend(args.iter().map(|a| a.to_string()));
    let bench_args = vec![
        "--order-effect".to_string(),
        "--protocol".to_string(),
        "stallscope".to_string(),
        "--runs".to_string(),
        plan.runs.to_string(),
        "--warmup".to_string(),
        plan.warmup.to_string(),
        words.join(" "),
    ];
    let (table, json) = run_bench(bench_args, json_path)?;
    let effects = json
        .order_effects
        .context("bench JSON has no order_effects")?
        .into_iter()
        .map(|e| OrderEffect {
            case: e.case,
            alone_ns: e.alone_ns as f64,
            in_sequence_ns: e.in_sequence_ns as f64,
            ratio: e.ratio,
            p_value: e.p_value,
            flagged: e.flagged,
        })
        .collect();
    Ok((table, effects))
}
