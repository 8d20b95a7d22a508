//! `--order-effect`: does a case take a different time when it runs alone in a fresh
//! process than in the program's normal sequence, after the other cases?
//!
//! Two ways to talk to the program (see docs/BENCH.md):
//! - Google Benchmark: `--benchmark_list_tests`, `--benchmark_filter=^NAME$`,
//!   `--benchmark_format=json`; the normal sequence is the unfiltered program.
//! - The stallscope protocol: `--stallscope-list` prints one case per line;
//!   `--stallscope-run CASE...` runs those cases in that order and prints
//!   `CASE<TAB>NANOSECONDS` per case.

use super::args::Protocol;
use super::executor::{CommandSpec, Executor, Output};
use super::progress::Progress;
use super::results::OrderEffect;
use super::runner::{RunCount, rounds_for_budget};
use super::stats;
use anyhow::{Context, Result, bail};
use std::collections::HashMap;
use std::time::Duration;

/// The protocol actually in use (`Protocol::Auto` resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    GoogleBenchmark,
    Stallscope,
}

pub struct OrderEffectOptions {
    pub warmup: usize,
    pub runs: RunCount,
    pub alpha: f64,
    pub noise: f64,
}

/// Lists the cases, choosing the dialect when asked to detect it.
pub fn list_cases(
    executor: &mut dyn Executor,
    program: &[String],
    protocol: Protocol,
) -> Result<(Dialect, Vec<String>)> {
    let candidates: &[Dialect] = match protocol {
        Protocol::Gbench => &[Dialect::GoogleBenchmark],
        Protocol::Stallscope => &[Dialect::Stallscope],
        Protocol::Auto => &[Dialect::GoogleBenchmark, Dialect::Stallscope],
    };
    let mut failures = Vec::new();
    for &dialect in candidates {
        let flag = match dialect {
            Dialect::GoogleBenchmark => "--benchmark_list_tests",
            Dialect::Stallscope => "--stallscope-list",
        };
        let mut argv = program.to_vec();
        argv.push(flag.into());
        let listing = CommandSpec::new(argv);
        let m = executor.run(&listing, Output::Capture)?;
        let cases: Vec<String> = String::from_utf8_lossy(&m.stdout)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        if m.exit.success() && !cases.is_empty() {
            return Ok((dialect, cases));
        }
        failures.push(format!(
            "`{}`: {}, {} cases",
            listing.display(),
            m.exit,
            cases.len()
        ));
    }
    bail!(
        "cannot list the cases of `{}` (tried {}); it must be a Google Benchmark program or \
         follow the stallscope protocol described in docs/BENCH.md",
        shell_words::join(program),
        failures.join("; ")
    )
}

/// Google Benchmark filters are regular expressions; case names often contain `/`,
/// `<`, `:` (harmless) and sometimes `.`, `(`, `[` (not).
fn regex_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

fn sequence_command(program: &[String], dialect: Dialect, cases: &[String]) -> CommandSpec {
    let mut argv = program.to_vec();
    match dialect {
        Dialect::GoogleBenchmark => argv.push("--benchmark_format=json".into()),
        Dialect::Stallscope => {
            argv.push("--stallscope-run".into());
            argv.extend(cases.iter().cloned());
        }
    }
    CommandSpec::new(argv)
}

fn alone_command(program: &[String], dialect: Dialect, case: &str) -> CommandSpec {
    let mut argv = program.to_vec();
    match dialect {
        Dialect::GoogleBenchmark => {
            argv.push(format!("--benchmark_filter=^{}$", regex_escape(case)));
            argv.push("--benchmark_format=json".into());
        }
        Dialect::Stallscope => {
            argv.push("--stallscope-run".into());
            argv.push(case.into());
        }
    }
    CommandSpec::new(argv)
}

/// Time per case in nanoseconds, from one run's stdout.
pub fn parse_case_times(dialect: Dialect, stdout: &[u8]) -> Result<HashMap<String, f64>> {
    match dialect {
        Dialect::GoogleBenchmark => parse_gbench_json(stdout),
        Dialect::Stallscope => Ok(String::from_utf8_lossy(stdout)
            .lines()
            .filter_map(|line| {
                let (case, time) = line.rsplit_once('\t')?;
                Some((case.trim().to_string(), time.trim().parse::<f64>().ok()?))
            })
            .collect()),
    }
}

/// Real time per iteration of each benchmark; repetitions are reduced to their median
/// and aggregate rows (mean, stddev, ...) are skipped.
fn parse_gbench_json(stdout: &[u8]) -> Result<HashMap<String, f64>> {
    let document: serde_json::Value =
        serde_json::from_slice(stdout).context("Google Benchmark output is not JSON")?;
    let benchmarks = document["benchmarks"]
        .as_array()
        .context("Google Benchmark JSON has no `benchmarks` array")?;
    let mut samples: HashMap<String, Vec<f64>> = HashMap::new();
    for entry in benchmarks {
        if entry["run_type"].as_str() == Some("aggregate")
            || entry["error_occurred"].as_bool() == Some(true)
        {
            continue;
        }
        let (Some(name), Some(time)) = (entry["name"].as_str(), entry["real_time"].as_f64()) else {
            continue;
        };
        let scale = match entry["time_unit"].as_str().unwrap_or("ns") {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            other => bail!("unknown Google Benchmark time unit `{other}`"),
        };
        samples
            .entry(name.to_string())
            .or_default()
            .push(time * scale);
    }
    Ok(samples
        .into_iter()
        .map(|(name, times)| (name, stats::median(&times)))
        .collect())
}

fn run_and_parse(
    executor: &mut dyn Executor,
    command: &CommandSpec,
    dialect: Dialect,
    expected: &[String],
) -> Result<(HashMap<String, f64>, Duration)> {
    let m = executor.run(command, Output::Capture)?;
    if !m.exit.success() {
        bail!("`{}` failed with {}", command.display(), m.exit);
    }
    let times = parse_case_times(dialect, &m.stdout)
        .with_context(|| format!("reading the times printed by `{}`", command.display()))?;
    for case in expected {
        if !times.contains_key(case) {
            bail!("`{}` printed no time for case `{case}`", command.display());
        }
    }
    Ok((times, Duration::from_nanos(m.wall_ns)))
}

/// Smallest two-sided p-value an exact Mann-Whitney test can give with these sizes:
/// 2 / C(n1 + n2, n1).
fn smallest_p_value(n1: usize, n2: usize) -> f64 {
    let mut ways = 1.0;
    for i in 0..n1 {
        ways = ways * (n2 + i + 1) as f64 / (i + 1) as f64;
    }
    (2.0 / ways).min(1.0)
}

/// Measures every case alone and in sequence, in interleaved rounds (sequence first in
/// even rounds, last in odd ones), and tests each case for a difference.
pub fn measure(
    executor: &mut dyn Executor,
    program: &[String],
    protocol: Protocol,
    options: &OrderEffectOptions,
    progress: &mut dyn Progress,
) -> Result<(Dialect, Vec<OrderEffect>)> {
    let (dialect, cases) = list_cases(executor, program, protocol)?;
    let sequence = sequence_command(program, dialect, &cases);
    let alone: Vec<CommandSpec> = cases
        .iter()
        .map(|c| alone_command(program, dialect, c))
        .collect();

    // Per round: the sequence (index 0), then each case alone (index 1 + case).
    let commands_per_round = 1 + cases.len();
    let warmup = match options.runs {
        RunCount::Budget(_) => options.warmup.max(1),
        RunCount::Fixed(_) => options.warmup,
    };
    let mut round_time = Duration::ZERO;
    for round in 0..warmup {
        round_time = Duration::ZERO;
        progress.update(round, warmup, "warm-up");
        round_time += run_and_parse(executor, &sequence, dialect, &cases)?.1;
        for (case, command) in cases.iter().zip(&alone) {
            round_time += run_and_parse(executor, command, dialect, std::slice::from_ref(case))?.1;
        }
    }
    let rounds = match options.runs {
        RunCount::Fixed(n) => n,
        RunCount::Budget(budget) => rounds_for_budget(budget, round_time),
    };
    if rounds < 2 {
        bail!("--order-effect needs at least 2 runs");
    }
    let threshold = options.alpha / cases.len() as f64;
    if smallest_p_value(rounds, rounds) > threshold {
        eprintln!(
            "stallscope: warning: with {rounds} runs and {} cases no difference can reach \
             p < {threshold:.2e}; use more --runs",
            cases.len()
        );
    }

    let mut alone_times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut sequence_times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let total = rounds * commands_per_round;
    let mut done = 0;
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..commands_per_round).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for slot in order {
            if slot == 0 {
                progress.update(done, total, "in sequence");
                let (times, _) = run_and_parse(executor, &sequence, dialect, &cases)?;
                for (i, case) in cases.iter().enumerate() {
                    sequence_times[i].push(times[case]);
                }
            } else {
                let i = slot - 1;
                progress.update(done, total, &format!("alone: {}", cases[i]));
                let (times, _) = run_and_parse(
                    executor,
                    &alone[i],
                    dialect,
                    std::slice::from_ref(&cases[i]),
                )?;
                alone_times[i].push(times[&cases[i]]);
            }
            done += 1;
        }
    }
    progress.update(total, total, "done");
    progress.finish();

    let effects = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let test = stats::mann_whitney(&alone_times[i], &sequence_times[i]);
            let alone_ns = stats::median(&alone_times[i]);
            let in_sequence_ns = stats::median(&sequence_times[i]);
            let ratio = in_sequence_ns / alone_ns;
            OrderEffect {
                case: case.clone(),
                alone_ns: alone_ns.round() as u64,
                in_sequence_ns: in_sequence_ns.round() as u64,
                ratio,
                p_value: test.p_value,
                effect_size: test.effect_size,
                flagged: test.p_value < threshold && (ratio - 1.0).abs() > options.noise,
                alone_runs: alone_times[i].len(),
                in_sequence_runs: sequence_times[i].len(),
            }
        })
        .collect();
    Ok((dialect, effects))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::executor::{Exit, MockExecutor, measurement_with_wall};
    use crate::bench::progress::Silent;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn escapes_regex_metacharacters_in_case_names() {
        assert_eq!(regex_escape("BM_x/iterations:5"), "BM_x/iterations:5");
        assert_eq!(regex_escape("BM_f<int>(1.5)"), "BM_f<int>\\(1\\.5\\)");
    }

    #[test]
    fn parses_google_benchmark_json_with_units_and_aggregates() {
        let json = br#"{"context": {}, "benchmarks": [
            {"name": "BM_a", "run_type": "iteration", "real_time": 2.0, "time_unit": "us"},
            {"name": "BM_a", "run_type": "iteration", "real_time": 4.0, "time_unit": "us"},
            {"name": "BM_a", "run_type": "iteration", "real_time": 9.0, "time_unit": "us"},
            {"name": "BM_a_mean", "run_type": "aggregate", "real_time": 5.0, "time_unit": "us"},
            {"name": "BM_b", "run_type": "iteration", "real_time": 1.5, "time_unit": "ms"}
        ]}"#;
        let times = parse_case_times(Dialect::GoogleBenchmark, json).unwrap();
        assert_eq!(times.len(), 2);
        assert_eq!(times["BM_a"], 4_000.0);
        assert_eq!(times["BM_b"], 1_500_000.0);
        assert!(parse_case_times(Dialect::GoogleBenchmark, b"not json").is_err());
    }

    #[test]
    fn parses_the_stallscope_protocol_and_ignores_other_lines() {
        let out = b"starting\nsort big\t1200\nhash\t 300.5\nbad\tnumber\n";
        let times = parse_case_times(Dialect::Stallscope, out).unwrap();
        assert_eq!(times.len(), 2);
        assert_eq!(times["sort big"], 1200.0);
        assert_eq!(times["hash"], 300.5);
    }

    #[test]
    fn smallest_p_value_of_exact_test() {
        assert!((smallest_p_value(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((smallest_p_value(3, 3) - 0.1).abs() < 1e-12);
    }

    /// A fake program following the stallscope protocol: case `b` takes 3000 ns after
    /// `a` ran in the same process and 1000 ns otherwise; `a` always 500 ns, plus jitter.
    fn fake_program(command: &CommandSpec, previous: usize) -> crate::bench::executor::Measurement {
        let mut m = measurement_with_wall(1_000_000);
        let args = &command.argv[1..];
        if args == ["--benchmark_list_tests"] {
            m.exit = Exit::Code(1);
        } else if args == ["--stallscope-list"] {
            m.stdout = b"a\nb\n".to_vec();
        } else {
            let jitter = (previous % 7) as f64 * 10.0;
            let mut ran_a = false;
            let mut out = String::new();
            for case in &args[1..] {
                let time = match case.as_str() {
                    "a" => 500.0,
                    _ if ran_a => 3000.0,
                    _ => 1000.0,
                };
                ran_a |= case == "a";
                out.push_str(&format!("{case}\t{}\n", time + jitter));
            }
            m.stdout = out.into_bytes();
        }
        m
    }

    #[test]
    fn flags_the_case_that_changes_after_another() {
        let mut executor = MockExecutor::new(fake_program);
        let options = OrderEffectOptions {
            warmup: 1,
            runs: RunCount::Fixed(8),
            alpha: 0.05,
            noise: 0.02,
        };
        let (dialect, effects) = measure(
            &mut executor,
            &strings(&["prog"]),
            Protocol::Auto,
            &options,
            &mut Silent,
        )
        .unwrap();
        assert_eq!(dialect, Dialect::Stallscope);
        assert_eq!(effects.len(), 2);
        assert!(!effects[0].flagged, "{:?}", effects[0]);
        assert!(effects[1].flagged, "{:?}", effects[1]);
        assert!((effects[1].ratio - 3.0).abs() < 0.1);
        assert_eq!(effects[1].effect_size, 1.0);
        assert_eq!(effects[1].alone_runs, 8);
        // Two listing attempts, one warm-up round and 8 rounds of 3 commands.
        assert_eq!(executor.calls.len(), 2 + 3 + 8 * 3);
        // Odd rounds run the cases alone first: the balance of the interleaving.
        let round_two: Vec<String> = executor.calls[2 + 3 + 3..2 + 3 + 6]
            .iter()
            .map(|c| c.argv[1..].join(" "))
            .collect();
        assert_eq!(
            round_two,
            [
                "--stallscope-run b",
                "--stallscope-run a",
                "--stallscope-run a b"
            ]
        );
    }

    #[test]
    fn a_program_following_no_protocol_is_reported() {
        let mut executor = MockExecutor::new(|_, _| {
            let mut m = measurement_with_wall(1_000);
            m.exit = Exit::Code(2);
            m
        });
        let options = OrderEffectOptions {
            warmup: 0,
            runs: RunCount::Fixed(4),
            alpha: 0.05,
            noise: 0.02,
        };
        let error = measure(
            &mut executor,
            &strings(&["prog"]),
            Protocol::Auto,
            &options,
            &mut Silent,
        )
        .unwrap_err();
        assert!(error.to_string().contains("docs/BENCH.md"), "{error}");
    }
}
