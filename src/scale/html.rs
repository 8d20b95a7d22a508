//! `scale --html`: one self-contained page (no script, no outside resource) with the speedup
//! curve as an SVG, the losses, the fits, the remedies and the verdict.

use super::report::ScaleReport;
use crate::util::escape;
use crate::util::{fmt_ns, fmt_pct};
use std::fmt::Write;

const W: f64 = 560.0;
const H: f64 = 340.0;
const PAD: f64 = 48.0;

pub fn render(r: &ScaleReport) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>stallscope scale: {}</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:60em}}\
         table{{border-collapse:collapse}}td,th{{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}}\
         td.l,th.l{{text-align:left}}.pred{{color:#777;font-style:italic}}</style></head><body>",
        escape(&r.command)
    );
    let _ = write!(
        out,
        "<h1>Scaling of <code>{}</code></h1><p>{} CPUs; medians of fresh, interleaved runs with {:.0}% confidence intervals.</p>",
        escape(&r.command),
        r.cpus,
        r.confidence * 100.0
    );
    let _ = write!(out, "<p><b>Verdict.</b> {}</p>", escape(&r.verdict));
    out.push_str(&svg(r));

    out.push_str("<h2>Thread counts</h2><table><tr><th>threads</th><th>median</th><th>CI</th><th>speedup</th><th>CI</th><th>efficiency</th></tr>");
    for c in &r.counts {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} – {}</td><td>{:.2}x</td><td>{:.2} – {:.2}</td><td>{}</td></tr>",
            c.threads,
            fmt_ns(c.median_ns),
            fmt_ns(c.ci_low_ns),
            fmt_ns(c.ci_high_ns),
            c.speedup,
            c.speedup_ci_low,
            c.speedup_ci_high,
            fmt_pct(c.efficiency)
        );
    }
    out.push_str("</table>");

    let f = &r.fit;
    let _ = write!(
        out,
        "<h2>Models</h2><p>Amdahl serial fraction: {}; USL contention σ: {}; coherence κ: {}.</p>",
        f.serial_fraction.map_or("—".into(), |s| format!("{s:.3}")),
        f.usl_contention.map_or("—".into(), |s| format!("{s:.3}")),
        f.usl_coherence
            .map_or("— (needs two counts above 1)".into(), |k| format!(
                "{k:.4}"
            ))
    );
    if !r.predictions.is_empty() {
        out.push_str("<p class=\"pred\">Predictions (not measured): ");
        let list: Vec<String> = r
            .predictions
            .iter()
            .map(|p| format!("{} threads {:.2}x", p.threads, p.speedup))
            .collect();
        let _ = write!(out, "{}</p>", escape(&list.join(", ")));
    }

    for c in r.counts.iter().filter(|c| c.threads > 1) {
        let _ = write!(
            out,
            "<h2>Where the speedup went at {} threads</h2><p>Ideal {}, measured {:.2}, lost {:.2}.</p>\
             <table><tr><th class=\"l\">cause</th><th>speedup lost</th><th>share</th><th class=\"l\">where</th></tr>",
            c.threads, c.threads, c.speedup, c.lost
        );
        for l in &c.losses {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{:.2}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                escape(super::causes::Cause::words_of(&l.cause)),
                l.speedup,
                fmt_pct(l.share),
                escape(l.user_frame.as_deref().unwrap_or(""))
            );
        }
        out.push_str("</table>");
        if c.loss_within_noise {
            let _ = write!(out, "<p>The loss is {}.</p>", super::report::WITHIN_NOISE);
        }
        if let Some(e) = &c.profile_error {
            let _ = write!(out, "<p>No causes: {}</p>", escape(e));
        }
    }

    if !r.remedies.is_empty() {
        out.push_str("<h2>Remedies, measured</h2><table><tr><th class=\"l\">remedy</th><th>threads</th><th>time ratio</th><th>CI</th><th class=\"l\">verdict</th><th class=\"l\">setting</th></tr>");
        for m in &r.remedies {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.3}</td><td>{:.3} – {:.3}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td></tr>",
                escape(&m.name),
                m.threads,
                m.ratio,
                m.ci_low,
                m.ci_high,
                escape(&m.summary),
                escape(&m.setting)
            );
        }
        out.push_str("</table>");
    }
    if !r.findings.is_empty() {
        out.push_str("<h2>Findings of the profiled run</h2><ul>");
        for f in &r.findings {
            let _ = write!(
                out,
                "<li><b>{}</b><br>{}{}</li>",
                escape(&f.title),
                escape(&f.remedy),
                f.measured
                    .as_ref()
                    .map(|m| format!("<br><i>{}</i>", escape(m)))
                    .unwrap_or_default()
            );
        }
        out.push_str("</ul>");
    }
    out.push_str("</body></html>\n");
    out
}

/// Speedup against threads: the ideal line, the measured points with their intervals, and the
/// model's predictions dashed.
fn svg(r: &ScaleReport) -> String {
    let max_n = r
        .counts
        .iter()
        .map(|c| c.threads)
        .chain(r.predictions.iter().map(|p| p.threads).take(1))
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let max_s = r
        .counts
        .iter()
        .map(|c| c.speedup_ci_high)
        .chain(r.predictions.iter().take(1).map(|p| p.speedup))
        .fold(max_n, f64::max);
    let x = |n: f64| PAD + (n - 1.0) / (max_n - 1.0) * (W - 2.0 * PAD);
    let y = |s: f64| H - PAD - s / max_s * (H - 2.0 * PAD);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"speedup against thread count\">\
         <line x1=\"{PAD}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000\"/><line x1=\"{PAD}\" y1=\"{}\" x2=\"{PAD}\" y2=\"{PAD}\" stroke=\"#000\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">threads</text><text x=\"12\" y=\"{}\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">speedup</text>",
        H - PAD,
        W - PAD,
        H - PAD,
        H - PAD,
        W / 2.0,
        H - 8.0,
        H / 2.0,
        H / 2.0
    );
    // Ideal: speedup = threads, as far as the axis goes.
    let ideal_end = max_n.min(max_s);
    let _ = write!(
        out,
        "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#999\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#999\">ideal</text>",
        x(1.0),
        y(1.0),
        x(ideal_end),
        y(ideal_end),
        x(ideal_end) - 30.0,
        y(ideal_end) - 6.0
    );
    let mut ns: Vec<f64> = r.counts.iter().map(|c| c.threads as f64).collect();
    ns.extend(r.predictions.iter().take(1).map(|p| p.threads as f64));
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    for n in ns {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>",
            x(n),
            H - PAD + 16.0
        );
    }
    let points: Vec<String> = r
        .counts
        .iter()
        .map(|c| format!("{:.1},{:.1}", x(c.threads as f64), y(c.speedup)))
        .collect();
    let _ = write!(
        out,
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1565c0\" stroke-width=\"2\"/>",
        points.join(" ")
    );
    for c in &r.counts {
        let cx = x(c.threads as f64);
        let _ = write!(
            out,
            "<line x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\" stroke=\"#1565c0\"/><circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#1565c0\"><title>{} threads: {:.2}x ({:.2}-{:.2})</title></circle>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#1565c0\">{:.2}x</text>",
            y(c.speedup_ci_low),
            y(c.speedup_ci_high),
            y(c.speedup),
            c.threads,
            c.speedup,
            c.speedup_ci_low,
            c.speedup_ci_high,
            cx + 6.0,
            y(c.speedup) - 6.0,
            c.speedup
        );
    }
    if let (Some(last), Some(p)) = (r.counts.last(), r.predictions.first()) {
        let _ = write!(
            out,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#777\" stroke-dasharray=\"5,4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#777\" text-anchor=\"end\">predicted {:.2}x</text>",
            x(last.threads as f64),
            y(last.speedup),
            x(p.threads as f64),
            y(p.speedup),
            x(p.threads as f64),
            y(p.speedup) - 8.0,
            p.speedup
        );
    }
    out.push_str("</svg>");
    out
}
