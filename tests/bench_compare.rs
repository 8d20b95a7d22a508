//! `stallscope bench` on real tiny programs: comparisons, verdicts and exports.

mod common;

use common::{TempDir, assert_success, bench_json, f64_of, stallscope};
use std::process::Command;

#[test]
fn sleeping_twice_as_long_is_about_twice_as_slow() {
    let (json, terminal) = bench_json(
        "sleep_ratio",
        // Long enough that process start-up (milliseconds, more on a loaded machine) stays small
        // beside the difference measured.
        &["--runs", "5", "--warmup", "1", "sleep 0.1", "sleep 0.2"],
    );
    let variants = json["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    for v in variants {
        assert_eq!(v["runs"], 5);
        let median = f64_of(v, "median_ns");
        assert!(f64_of(v, "min_ns") <= f64_of(v, "ci_low_ns"));
        assert!(f64_of(v, "ci_low_ns") <= median && median <= f64_of(v, "ci_high_ns"));
        assert!(f64_of(v, "ci_high_ns") <= f64_of(v, "max_ns"));
        assert!(f64_of(v, "max_rss_bytes") > 0.0);
    }
    assert!(f64_of(&variants[0], "median_ns") >= 100e6);
    assert!(f64_of(&variants[1], "median_ns") >= 200e6);

    let comparison = &json["comparisons"][0];
    assert_eq!(comparison["variant"], "sleep 0.2");
    assert_eq!(comparison["baseline"], "sleep 0.1");
    let ratio = f64_of(comparison, "ratio");
    assert!((1.6..2.5).contains(&ratio), "ratio {ratio}");
    assert!(f64_of(comparison, "ci_low") <= ratio && ratio <= f64_of(comparison, "ci_high"));
    assert_eq!(comparison["verdict"], "slower");
    assert!(terminal.contains("x slower"), "{terminal}");
}

#[test]
fn identical_commands_are_within_noise() {
    let (json, terminal) = bench_json("identical", &["--runs", "6", "sleep 0.02", "sleep 0.02"]);
    let comparison = &json["comparisons"][0];
    assert_eq!(comparison["verdict"], "within noise", "{json}");
    // The verdict is the claim under test; the ratio only has to be plausible, since
    // other processes on a shared machine can delay single runs by milliseconds.
    let ratio = f64_of(comparison, "ratio");
    assert!((0.75..1.33).contains(&ratio), "ratio {ratio}");
    // Repeated commands are told apart by name.
    assert_eq!(json["variants"][1]["name"], "sleep 0.02 #2");
    assert!(terminal.contains("within noise"), "{terminal}");
}

#[test]
fn faster_variant_is_reported_as_faster_with_inverted_factor() {
    let (json, terminal) = bench_json(
        "faster",
        &[
            "--runs",
            "4",
            "--name",
            "slow",
            "--name",
            "fast",
            "sleep 0.2",
            "sleep 0.05",
        ],
    );
    let comparison = &json["comparisons"][0];
    assert_eq!(comparison["verdict"], "faster");
    assert!(f64_of(comparison, "ratio") < 0.5);
    assert!(
        terminal.contains("fast: ") && terminal.contains("x faster"),
        "{terminal}"
    );
}

#[test]
fn thread_counts_are_substituted_exported_and_charted() {
    // The command reads the count from the environment and the placeholder; sleeping
    // 300 ms / n makes a perfectly scaling "program" (long beside the start-up of sh and bc).
    let script = r#"sh -c 'test "$STALLSCOPE_THREADS" = "$0" && sleep $(echo "scale=3; 0.3 / $0" | bc)' {threads}"#;
    let has_bc = std::process::Command::new("bc")
        .arg("--version")
        .output()
        .is_ok();
    let script = if has_bc {
        script.to_string()
    } else {
        // Without bc: sleep 300 ms for one thread, 150 ms for two.
        r#"sh -c 'test "$STALLSCOPE_THREADS" = "$0" && if [ "$0" = 1 ]; then sleep 0.3; else sleep 0.15; fi' {threads}"#.to_string()
    };
    let (json, terminal) = bench_json("threads", &["--runs", "3", "--threads", "1,2", &script]);
    let scaling = json["scaling"].as_array().expect("scaling rows");
    assert_eq!(scaling.len(), 2);
    assert_eq!(scaling[1]["threads"], 2);
    let speedup = f64_of(&scaling[1], "speedup");
    assert!((1.5..2.3).contains(&speedup), "speedup {speedup}");
    let efficiency = f64_of(&scaling[1], "efficiency");
    assert!((efficiency - speedup / 2.0).abs() < 1e-9);
    assert!(
        terminal.contains("speedup (# measured, | ideal)"),
        "{terminal}"
    );
    assert!(terminal.contains("2 threads"), "{terminal}");
}

#[test]
fn markdown_and_csv_exports_hold_every_variant() {
    let dir = TempDir::new("bench-exports");
    let (csv, md) = (dir.join("export.csv"), dir.join("export.md"));
    let output = Command::new(stallscope())
        .args([
            "bench",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-progress",
            "true",
            "sleep 0.001",
        ])
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert_success(&output);
    let csv = std::fs::read_to_string(csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("name,command,runs,median_ns"));
    assert!(lines[1].starts_with("true,true,2,"));
    // The baseline has no ratio; the other row has one and a verdict.
    assert!(lines[1].ends_with(",,,,"), "{csv}");
    assert!(!lines[2].ends_with(','), "{csv}");
    let md = std::fs::read_to_string(md).unwrap();
    assert!(md.contains("| `true` | 2 |"), "{md}");
    assert!(md.contains("| `sleep 0.001` | `true` |"), "{md}");
}

#[test]
fn a_failing_command_is_an_error_unless_ignored() {
    let output = Command::new(stallscope())
        .args([
            "bench",
            "--runs",
            "2",
            "--no-progress",
            "true",
            "sh -c 'exit 3'",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("exit code 3") && stderr.contains("--ignore-failure"),
        "{stderr}"
    );

    let (json, _) = bench_json(
        "ignored_failure",
        &["--runs", "2", "--ignore-failure", "true", "sh -c 'exit 3'"],
    );
    assert_eq!(json["variants"][1]["failed_runs"], 2);
}

#[test]
fn a_time_budget_fixes_an_even_number_of_runs() {
    let (json, _) = bench_json(
        "budget",
        &["--time-budget", "0.5", "sleep 0.02", "sleep 0.02"],
    );
    let runs = json["variants"][0]["runs"].as_u64().unwrap();
    // A round takes a little over 40 ms: at most 12 fit, rounded down to even.
    assert!(
        (4..=12).contains(&runs) && runs.is_multiple_of(2),
        "runs {runs}"
    );
    assert_eq!(json["variants"][1]["runs"].as_u64().unwrap(), runs);
}
