//! The terminal view of `scale` and its closing verdict.

use super::report::{CountRow, ScaleReport};
use crate::bench::results::Verdict;
use crate::util::{fmt_ns, fmt_pct};
use std::fmt::Write;

const CURVE_WIDTH: usize = 40;

pub fn terminal(r: &ScaleReport) -> String {
    let mut out = String::new();
    let level = r.confidence * 100.0;
    let _ = writeln!(out, "stallscope scale: {}", r.command);
    let _ = writeln!(
        out,
        "{} CPUs, {} timed runs per count, medians with {level:.0}% confidence intervals\n",
        r.cpus,
        r.counts.first().map_or(0, |c| c.runs)
    );
    let _ = writeln!(
        out,
        "{:>7}  {:>10}  {:>21}  {:>20}  {:>10}",
        "threads", "median", "CI", "speedup (CI)", "efficiency"
    );
    for c in &r.counts {
        let _ = writeln!(
            out,
            "{:>7}  {:>10}  {:>21}  {:>20}  {:>10}",
            c.threads,
            fmt_ns(c.median_ns),
            format!("{}-{}", fmt_ns(c.ci_low_ns), fmt_ns(c.ci_high_ns)),
            format!(
                "{:.2}x ({:.2}-{:.2})",
                c.speedup, c.speedup_ci_low, c.speedup_ci_high
            ),
            fmt_pct(c.efficiency)
        );
    }
    out.push('\n');
    curve(&mut out, r);

    let fit = &r.fit;
    match fit.serial_fraction {
        Some(s) => {
            let _ = write!(
                out,
                "\nFit (counts {}): Amdahl serial fraction {:.3} (speedup bound {}); USL contention σ {:.3}, coherence κ {}",
                fit.counts_used
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                s,
                if s > 0.0 {
                    format!("{:.1}x", 1.0 / s)
                } else {
                    "none".into()
                },
                fit.usl_contention.unwrap_or(0.0),
                fit.usl_coherence.map_or(
                    "not identifiable from fewer than 2 counts above 1".into(),
                    |k| format!("{k:.4}")
                )
            );
            out.push('\n');
        }
        None => out.push_str("\nFit: needs a measured count above 1 and at most the CPUs\n"),
    }
    if !r.predictions.is_empty() {
        let list: Vec<String> = r
            .predictions
            .iter()
            .map(|p| format!("{} threads {:.2}x", p.threads, p.speedup))
            .collect();
        let _ = writeln!(
            out,
            "PREDICTION ({}, not measured; on a machine with that many CPUs): {}",
            r.predictions[0].model,
            list.join(", ")
        );
    }

    for c in r.counts.iter().filter(|c| c.threads > 1) {
        losses(&mut out, c);
    }

    if !r.remedies.is_empty() {
        out.push_str("\nRemedies, measured side by side (time with / time without):\n");
        for m in &r.remedies {
            let _ = writeln!(
                out,
                "  {:<18} {:>3} threads  {:>5.3} ({:.3}-{:.3})  {:<13} {}",
                m.name,
                m.threads,
                m.ratio,
                m.ci_low,
                m.ci_high,
                match m.verdict {
                    Verdict::Faster => "faster",
                    Verdict::Slower => "slower",
                    Verdict::WithinNoise => "within noise",
                },
                m.setting
            );
        }
    }
    if !r.findings.is_empty() {
        let _ = writeln!(
            out,
            "\nFindings of the profiled run at {} threads:",
            r.findings[0].threads
        );
        for f in &r.findings {
            let _ = writeln!(out, "  - {}", f.title);
            if let Some(m) = &f.measured {
                let _ = writeln!(out, "    {m}");
            }
        }
    }
    let _ = writeln!(out, "\nVerdict: {}", r.verdict);
    out
}

/// The speedup at each count against the ideal line, one row per count.
fn curve(out: &mut String, r: &ScaleReport) {
    let top = r
        .counts
        .iter()
        .map(|c| (c.threads as f64).max(c.speedup_ci_high))
        .fold(1.0, f64::max);
    let pos = |x: f64| {
        ((x / top) * CURVE_WIDTH as f64)
            .round()
            .clamp(0.0, CURVE_WIDTH as f64) as usize
    };
    let _ = writeln!(
        out,
        "speedup   0{}{top:.1}x   (# measured, [ ] its CI, | ideal)",
        " ".repeat(CURVE_WIDTH - 1)
    );
    for c in &r.counts {
        let mut row: Vec<char> = vec![' '; CURVE_WIDTH + 1];
        for cell in row.iter_mut().take(pos(c.speedup)) {
            *cell = '#';
        }
        row[pos(c.speedup_ci_low)] = '[';
        row[pos(c.speedup_ci_high)] = ']';
        row[pos(c.threads as f64)] = '|';
        let _ = writeln!(
            out,
            "{:>3} thr   {}",
            c.threads,
            row.into_iter().collect::<String>()
        );
    }
}

fn losses(out: &mut String, c: &CountRow) {
    let _ = writeln!(
        out,
        "\nWhere the speedup went at {} threads: ideal {}, measured {:.2}, lost {:.2}",
        c.threads, c.threads, c.speedup, c.lost
    );
    if let Some(e) = &c.profile_error {
        let _ = writeln!(out, "  (no causes: {e})");
    }
    if c.losses.is_empty() {
        out.push_str("  nothing lost\n");
        return;
    }
    let within_noise = format!("({})", super::report::WITHIN_NOISE);
    for l in &c.losses {
        let _ = writeln!(
            out,
            "  {:<28} {:>6.2}  {:>6}  {}",
            super::causes::Cause::words_of(&l.cause),
            l.speedup,
            fmt_pct(l.share),
            l.user_frame.as_deref().unwrap_or(if c.loss_within_noise {
                &within_noise
            } else if l.cause == "residual" {
                "(not explained by the profiles: noise, or a cost no cause measures)"
            } else {
                ""
            })
        );
    }
}

/// One paragraph: how well it scales, the biggest cause, the model, the best remedy.
pub fn verdict(r: &ScaleReport) -> String {
    let Some(top) = r
        .counts
        .iter()
        .filter(|c| c.threads <= r.cpus.max(1))
        .max_by_key(|c| c.threads)
        .or(r.counts.last())
    else {
        return "nothing was measured.".into();
    };
    let mut text = if top.threads <= 1 {
        "only one thread count was measured: nothing to compare.".to_string()
    } else {
        let pace = if top.speedup >= 1.0 {
            format!("{:.2}x faster", top.speedup)
        } else {
            format!("{:.2}x slower", 1.0 / top.speedup)
        };
        format!(
            "At {} threads the program runs {pace} than at {} (speedup {:.2}, {:.0}% efficiency, {:.0}% CI {:.2}-{:.2}x).",
            top.threads,
            r.counts[0].threads,
            top.speedup,
            top.efficiency * 100.0,
            r.confidence * 100.0,
            top.speedup_ci_low,
            top.speedup_ci_high
        )
    };
    let named: Vec<_> = top
        .losses
        .iter()
        .filter(|l| l.cause != "residual")
        .collect();
    if top.threads > 1 {
        if top.loss_within_noise && top.efficiency >= 0.9 {
            text.push_str(
                " It scales close to ideal: the ideal lies inside that interval, so no cause of the loss is named.",
            );
        } else if top.loss_within_noise {
            text.push_str(
                " The ideal lies inside that interval: the timed runs are too noisy to charge the loss to a cause (take more runs with --runs).",
            );
        } else if top.efficiency >= 0.9 && named.is_empty() {
            text.push_str(" It scales close to ideal: no cause of loss stands out.");
        } else if let Some(l) = named.first() {
            let _ = write!(
                text,
                " The biggest loss is {} ({} of the {:.2} lost{}).",
                super::causes::Cause::words_of(&l.cause),
                fmt_pct(l.share),
                top.lost,
                l.user_frame
                    .as_deref()
                    .map(|f| format!(", in {f}"))
                    .unwrap_or_default()
            );
        } else {
            text.push_str(" No measured cause explains the loss (see the residual).");
        }
    }
    if let Some(s) = r.fit.serial_fraction.filter(|s| *s > 0.01) {
        let _ = write!(
            text,
            " Its fitted serial fraction is {s:.3}, so no thread count can make it more than {:.1}x faster",
            1.0 / s
        );
        if let Some(p) = r.predictions.first() {
            let _ = write!(
                text,
                "; predicted (not measured) at {} threads: {:.2}x",
                p.threads, p.speedup
            );
        }
        text.push('.');
    }
    if let Some(best) = r
        .remedies
        .iter()
        .filter(|m| m.threads == top.threads && m.verdict == Verdict::Faster)
        .min_by(|a, b| a.ratio.total_cmp(&b.ratio))
    {
        let _ = write!(
            text,
            " Measured remedy: {} ({}), {} at {} threads.",
            best.name, best.setting, best.summary, best.threads
        );
    } else if !r.remedies.is_empty() {
        text.push_str(" None of the remedies tried was measurably faster.");
    }
    text
}
