//! Rendering results: terminal tables and chart, and the JSON, Markdown and CSV exports.

use super::results::{BenchReport, OrderEffect, ScalingRow, VariantSummary};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::Path;

pub use crate::util::fmt_ns as format_ns;

pub use crate::util::fmt_bytes as format_bytes;

fn percent(fraction: f64) -> String {
    format!("{:.0}%", fraction * 100.0)
}

/// Column-aligned text table: first column left-aligned, the others right-aligned.
fn text_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            let pad = width - cell.chars().count();
            if i == 0 {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            } else {
                text.push_str("  ");
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            }
        }
        text.trim_end().to_string() + "\n"
    };
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    let mut out = line(header.to_vec());
    out.push_str(&line(rule.iter().map(String::as_str).collect()));
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

const VARIANT_HEADER: [&str; 11] = [
    "variant", "runs", "median", "CI", "min", "max", "user", "sys", "max RSS", "faults", "outliers",
];

fn variant_row(v: &VariantSummary) -> Vec<String> {
    vec![
        v.name.clone(),
        v.runs.to_string(),
        format_ns(v.median_ns),
        format!("{}-{}", format_ns(v.ci_low_ns), format_ns(v.ci_high_ns)),
        format_ns(v.min_ns),
        format_ns(v.max_ns),
        format_ns(v.user_ns),
        format_ns(v.system_ns),
        format_bytes(v.max_rss_bytes),
        format!("{}/{}", v.minor_faults, v.major_faults),
        v.outliers.len().to_string(),
    ]
}

pub fn terminal(report: &BenchReport) -> String {
    let mut out = String::new();
    if !report.variants.is_empty() {
        let rows: Vec<Vec<String>> = report.variants.iter().map(variant_row).collect();
        out.push_str(&text_table(&VARIANT_HEADER, &rows));
        let level = report
            .variants
            .iter()
            .map(|v| v.ci_level)
            .fold(1.0, f64::min);
        let requested = report.settings.confidence;
        let _ = writeln!(
            out,
            "CI: order-statistic interval of the median (at least {:.1}% coverage); \
             faults: minor/major (median); outliers by MAD, kept in all figures.",
            level * 100.0
        );
        if level < requested {
            // [min, max] of n runs covers the median with probability 1 - 2^(1-n).
            let needed = (2.0 / (1.0 - requested)).log2().ceil() as usize;
            let _ = writeln!(
                out,
                "note: {} runs cannot give {:.0}% intervals; use --runs {needed} or more.",
                report.settings.runs_per_variant,
                requested * 100.0
            );
        }
    }
    if !report.comparisons.is_empty() {
        let _ = writeln!(out, "\nCompared with {}:", report.comparisons[0].baseline);
        for c in &report.comparisons {
            let _ = writeln!(out, "  {}: {}", c.variant, c.summary);
        }
    }
    let profiled: Vec<&VariantSummary> = report
        .variants
        .iter()
        .filter(|v| v.profile.is_some())
        .collect();
    if !profiled.is_empty() {
        let _ = writeln!(out, "\nWhere the time went (one profiled run each):");
        let rows: Vec<Vec<String>> = profiled
            .iter()
            .filter_map(|v| {
                let p = v.profile.as_ref()?;
                Some(vec![
                    v.name.clone(),
                    format_ns(p.wall_ns),
                    percent(p.alloc_share_of_cpu),
                    percent(p.lock_wait_share_of_busy),
                ])
            })
            .collect();
        out.push_str(&text_table(
            &["variant", "wall", "allocator", "locks"],
            &rows,
        ));
    }
    if !report.scaling.is_empty() {
        out.push('\n');
        out.push_str(&scaling_table(&report.scaling));
        out.push('\n');
        out.push_str(&scaling_chart(&report.scaling));
    }
    if !report.order_effects.is_empty() {
        out.push_str(&order_effect_table(&report.order_effects));
    }
    for missing in &report.missing_allocators {
        let _ = writeln!(out, "\nnot measured: {}", missing.message());
    }
    out
}

fn scaling_table(rows: &[ScalingRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.variant.clone(),
                r.threads.to_string(),
                format!("{:.2}x", r.speedup),
                format!("{:.2}-{:.2}x", r.speedup_ci_low, r.speedup_ci_high),
                percent(r.efficiency),
            ]
        })
        .collect();
    text_table(
        &["variant", "threads", "speedup", "CI", "efficiency"],
        &body,
    )
}

/// Horizontal bars of the speedup, with `|` where perfect scaling would end.
pub fn scaling_chart(rows: &[ScalingRow]) -> String {
    const WIDTH: f64 = 50.0;
    let ideal = |r: &ScalingRow| r.threads as f64 / r.baseline_threads as f64;
    let top = rows
        .iter()
        .map(|r| r.speedup.max(ideal(r)))
        .fold(1.0, f64::max);
    let label_width = rows
        .iter()
        .map(|r| r.variant.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("speedup (# measured, | ideal)\n");
    for r in rows {
        let filled = ((r.speedup / top) * WIDTH).round() as usize;
        let ideal_at = (((ideal(r) / top) * WIDTH).round() as usize).max(1) - 1;
        let mut bar: Vec<char> = (0..WIDTH as usize)
            .map(|i| if i < filled { '#' } else { ' ' })
            .collect();
        bar[ideal_at] = '|';
        let bar: String = bar.into_iter().collect();
        let _ = writeln!(
            out,
            "{:<label_width$} {} {:.2}x",
            r.variant,
            bar.trim_end(),
            r.speedup
        );
    }
    out
}

fn order_effect_table(effects: &[OrderEffect]) -> String {
    let rows: Vec<Vec<String>> = effects
        .iter()
        .map(|e| {
            vec![
                e.case.clone(),
                format_ns(e.alone_ns),
                format_ns(e.in_sequence_ns),
                format!("{:.2}x", e.ratio),
                format!("{:.2e}", e.p_value),
                format!("{:+.2}", e.effect_size),
                if e.flagged {
                    "ORDER EFFECT".into()
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    let mut out = text_table(
        &[
            "case",
            "alone",
            "in sequence",
            "ratio",
            "p",
            "effect",
            "flag",
        ],
        &rows,
    );
    out.push_str(
        "ratio = in sequence / alone; p: Mann-Whitney U; effect: rank-biserial \
         (+1: always slower in sequence).\n",
    );
    let flagged = effects.iter().filter(|e| e.flagged).count();
    let _ = writeln!(
        out,
        "{flagged} of {} cases change with the order they run in.",
        effects.len()
    );
    out
}

pub fn json(report: &BenchReport) -> Result<String> {
    Ok(serde_json::to_string_pretty(report)? + "\n")
}

fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let escape = |cell: &str| cell.replace('|', "\\|");
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| escape(c)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

pub fn markdown(report: &BenchReport) -> String {
    let mut out = String::new();
    if !report.variants.is_empty() {
        let rows: Vec<Vec<String>> = report
            .variants
            .iter()
            .map(|v| {
                let mut row = variant_row(v);
                row[0] = format!("`{}`", v.name);
                row
            })
            .collect();
        out.push_str(&markdown_table(&VARIANT_HEADER, &rows));
    }
    if !report.comparisons.is_empty() {
        let rows: Vec<Vec<String>> = report
            .comparisons
            .iter()
            .map(|c| {
                vec![
                    format!("`{}`", c.variant),
                    format!("`{}`", c.baseline),
                    c.summary.clone(),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&markdown_table(&["variant", "baseline", "result"], &rows));
    }
    if !report.scaling.is_empty() {
        let rows: Vec<Vec<String>> = report
            .scaling
            .iter()
            .map(|r| {
                vec![
                    r.threads.to_string(),
                    format!("{:.2}x", r.speedup),
                    format!("{:.2}-{:.2}x", r.speedup_ci_low, r.speedup_ci_high),
                    percent(r.efficiency),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&markdown_table(
            &["threads", "speedup", "CI", "efficiency"],
            &rows,
        ));
    }
    if !report.order_effects.is_empty() {
        let rows: Vec<Vec<String>> = report
            .order_effects
            .iter()
            .map(|e| {
                vec![
                    format!("`{}`", e.case),
                    format_ns(e.alone_ns),
                    format_ns(e.in_sequence_ns),
                    format!("{:.2}x", e.ratio),
                    format!("{:.2e}", e.p_value),
                    format!("{:+.2}", e.effect_size),
                    if e.flagged {
                        "**yes**".into()
                    } else {
                        "no".into()
                    },
                ]
            })
            .collect();
        out.push_str(&markdown_table(
            &[
                "case",
                "alone",
                "in sequence",
                "ratio",
                "p",
                "effect",
                "order effect",
            ],
            &rows,
        ));
    }
    out
}

fn csv_field(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

fn csv_lines(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut out = header.join(",") + "\n";
    for row in rows {
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out.push_str(&(fields.join(",") + "\n"));
    }
    out
}

/// One row per variant (with its comparison to the baseline), or one row per case
/// for `--order-effect`.
pub fn csv(report: &BenchReport) -> String {
    if !report.order_effects.is_empty() {
        let rows = report
            .order_effects
            .iter()
            .map(|e| {
                vec![
                    e.case.clone(),
                    e.alone_ns.to_string(),
                    e.in_sequence_ns.to_string(),
                    e.ratio.to_string(),
                    e.p_value.to_string(),
                    e.effect_size.to_string(),
                    e.flagged.to_string(),
                ]
            })
            .collect();
        return csv_lines(
            &[
                "case",
                "alone_ns",
                "in_sequence_ns",
                "ratio",
                "p_value",
                "effect_size",
                "flagged",
            ],
            rows,
        );
    }
    // Comparisons are of every variant after the first, in order.
    let rows = report
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let comparison = i.checked_sub(1).and_then(|c| report.comparisons.get(c));
            let ratio_field = |f: fn(&super::results::Comparison) -> String| {
                comparison.map(f).unwrap_or_default()
            };
            vec![
                v.name.clone(),
                v.command.clone(),
                v.runs.to_string(),
                v.median_ns.to_string(),
                v.ci_low_ns.to_string(),
                v.ci_high_ns.to_string(),
                v.min_ns.to_string(),
                v.max_ns.to_string(),
                v.user_ns.to_string(),
                v.system_ns.to_string(),
                v.max_rss_bytes.to_string(),
                v.minor_faults.to_string(),
                v.major_faults.to_string(),
                v.outliers.len().to_string(),
                ratio_field(|c| c.ratio.to_string()),
                ratio_field(|c| c.ci_low.to_string()),
                ratio_field(|c| c.ci_high.to_string()),
                ratio_field(|c| {
                    serde_json::to_value(c.verdict)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default()
                }),
            ]
        })
        .collect();
    csv_lines(
        &[
            "name",
            "command",
            "runs",
            "median_ns",
            "ci_low_ns",
            "ci_high_ns",
            "min_ns",
            "max_ns",
            "user_ns",
            "system_ns",
            "max_rss_bytes",
            "minor_faults",
            "major_faults",
            "outliers",
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "verdict",
        ],
        rows,
    )
}

pub fn write_file(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_read_naturally() {
        assert_eq!(format_ns(950), "950 ns");
        assert_eq!(format_ns(20_400_000), "20.40 ms");
        assert_eq!(format_ns(1_500), "1.5 µs");
        assert_eq!(format_ns(2_000_000_000), "2.000 s");
        assert_eq!(format_bytes(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn table_aligns_columns() {
        let table = text_table(
            &["name", "n"],
            &[
                vec!["a".into(), "100".into()],
                vec!["long name".into(), "2".into()],
            ],
        );
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "name         n");
        assert_eq!(lines[1], "---------  ---");
        assert_eq!(lines[2], "a          100");
        assert_eq!(lines[3], "long name    2");
    }

    #[test]
    fn chart_marks_ideal_and_measured_speedup() {
        let row = |threads, speedup| ScalingRow {
            variant: format!("{threads} threads"),
            threads,
            baseline_threads: 1,
            speedup,
            speedup_ci_low: speedup,
            speedup_ci_high: speedup,
            efficiency: speedup / threads as f64,
        };
        let chart = scaling_chart(&[row(1, 1.0), row(4, 2.0)]);
        let lines: Vec<&str> = chart.lines().collect();
        // 4 threads is the top of the scale: ideal at the last column, half filled.
        assert_eq!(
            lines[2],
            format!("4 threads {}{}| 2.00x", "#".repeat(25), " ".repeat(24))
        );
        assert_eq!(lines[1], format!("1 threads {}| 1.00x", "#".repeat(12)));
    }

    #[test]
    fn csv_quotes_fields_that_need_it() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
