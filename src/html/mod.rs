//! `stallscope html FILE -o OUT.html`: one self-contained page (inline CSS, no script, nothing
//! fetched): overview figures, per-thread bars, an SVG flame graph of allocation sites, histograms
//! of request sizes and latencies, the lock table and the phases. Light or dark by the reader's
//! `prefers-color-scheme`.

mod flame;

use crate::export::collapsed;
use crate::export::{Loaded, Weight, frame_name};
use crate::profile::format::size_bucket_range;
use crate::util::{fmt_bytes, fmt_count, fmt_ns, fmt_pct};
use anyhow::{Context, Result};
use flame::escape;
use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct HtmlArgs {
    /// Output file
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Profile file written by `stallscope run`
    pub file: PathBuf,
}

const STYLE: &str = r#"
:root { --bg:#fdfdfc; --fg:#1d1f21; --muted:#6a6f75; --card:#f1f2f4; --line:#d9dce0;
  --cpu:#4f8fd8; --alloc:#e4572e; --lock:#9b5de5; --idle:#c9ced6; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#16181b; --fg:#e6e6e6; --muted:#9aa0a6; --card:#22252a; --line:#3a3f46;
    --cpu:#5b9be6; --alloc:#f07050; --lock:#b084f0; --idle:#3d434b; }
}
body { background:var(--bg); color:var(--fg); font:14px/1.45 system-ui,sans-serif; margin:2em auto; max-width:1250px; padding:0 1em; }
h1 { font-size:1.5em; margin-bottom:.2em } h2 { font-size:1.15em; margin-top:2em; border-bottom:1px solid var(--line); }
.muted { color:var(--muted) } code { font-family:ui-monospace,monospace }
.cards { display:flex; flex-wrap:wrap; gap:.8em; margin:1em 0 }
.card { background:var(--card); border-radius:8px; padding:.6em 1em; min-width:9em }
.card b { display:block; font-size:1.35em }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums }
th, td { padding:.25em .6em; border-bottom:1px solid var(--line); text-align:right; vertical-align:top }
th:first-child, td:first-child, td.l { text-align:left }
.bar { display:flex; height:14px; border-radius:3px; overflow:hidden; background:var(--idle); min-width:200px }
.bar span { display:block; height:100% }
.cpu { background:var(--cpu) } .alloc { background:var(--alloc) } .lock { background:var(--lock) }
.legend span { display:inline-block; width:.9em; height:.9em; border-radius:2px; margin:0 .3em 0 1em; vertical-align:middle }
.hist td.b { width:60% } .hist .fill { background:var(--cpu); height:10px; border-radius:2px }
svg.flame text { font:11px ui-monospace,monospace; fill:#1d1f21; pointer-events:none }
svg.flame rect:hover { stroke:var(--fg); stroke-width:1 }
"#;

fn card(out: &mut String, label: &str, value: &str) {
    let _ = write!(
        out,
        r#"<div class="card"><span class="muted">{}</span><b>{}</b></div>"#,
        escape(label),
        escape(value)
    );
}

fn ns(v: u64) -> String {
    fmt_ns(v as f64)
}

/// The page for one profile.
pub fn render(p: &Loaded) -> String {
    let s = &p.summary;
    let mut o = String::new();
    let command = if s.command.is_empty() {
        s.exe.clone()
    } else {
        s.command.join(" ")
    };
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>stallscope: {}</title><style>{STYLE}</style></head><body>\n",
        escape(&command)
    );
    let _ = writeln!(
        o,
        "<h1>stallscope profile</h1><p><code>{}</code><br><span class=\"muted\">{} · pid {} · {} CPUs · {} · {}</span></p>",
        escape(&command),
        escape(&p.path),
        s.pid,
        s.ncpus,
        escape(&s.allocator),
        escape(&s.libc_version)
    );
    o.push_str("<div class=\"cards\">");
    card(&mut o, "wall time", &ns(s.wall_ns));
    card(&mut o, "threads", &s.threads.len().to_string());
    card(&mut o, "allocator calls", &fmt_count(s.alloc_calls()));
    card(&mut o, "in the allocator", &fmt_pct(s.alloc_share()));
    card(&mut o, "waiting for locks", &fmt_pct(s.lock_share()));
    card(
        &mut o,
        "CPU of thread time",
        &fmt_pct(crate::report::summary::ratio(
            s.cpu_ns(),
            s.thread_wall_ns(),
        )),
    );
    o.push_str("</div>\n");

    // Threads.
    o.push_str("<h2>Threads</h2><p class=\"legend muted\">share of each thread's life:<span class=\"cpu\"></span>CPU (other work)<span class=\"alloc\"></span>allocator<span class=\"lock\"></span>lock wait<span style=\"background:var(--idle)\"></span>off CPU</p>");
    o.push_str("<table><tr><th>thread</th><th>tid</th><th>life</th><th>CPU</th><th>allocator</th><th>lock wait</th><th style=\"width:40%\"></th></tr>");
    for t in &s.threads {
        let share = |v: u64| crate::report::summary::ratio(v, t.wall_ns);
        let (alloc, lock) = (share(t.alloc_ns), share(t.lock_wait_ns));
        let cpu_other = (share(t.cpu_ns) - alloc).max(0.0);
        let _ = write!(
            o,
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"bar\">\
             <span class=\"cpu\" style=\"width:{:.2}%\"></span><span class=\"alloc\" style=\"width:{:.2}%\"></span>\
             <span class=\"lock\" style=\"width:{:.2}%\"></span></div></td></tr>",
            escape(&t.name),
            if t.main { " (main)" } else { "" },
            t.tid,
            ns(t.wall_ns),
            fmt_pct(share(t.cpu_ns)),
            fmt_pct(alloc),
            fmt_pct(lock),
            (cpu_other * 100.0).min(100.0),
            (alloc * 100.0).min(100.0),
            (lock * 100.0)
                .min(100.0 - (cpu_other + alloc) * 100.0)
                .max(0.0),
        );
    }
    o.push_str("</table>\n");

    // Flame graphs.
    o.push_str("<h2>Allocation sites: time in the allocator</h2><p class=\"muted\">Estimated from sampled stacks; root at the bottom, the allocator function on top. Hover for figures.</p>");
    o.push_str(&flame::svg(&collapsed::stacks(p, Weight::Time), ns));
    o.push_str("<h2>Allocation sites: bytes requested</h2>");
    o.push_str(&flame::svg(&collapsed::stacks(p, Weight::Bytes), fmt_bytes));
    let waits = collapsed::stacks(p, Weight::LockWait);
    if !waits.is_empty() {
        o.push_str("<h2>Lock waits by stack</h2>");
        o.push_str(&flame::svg(&waits, ns));
    }

    // Allocator functions and histograms.
    o.push_str("<h2>Allocator functions</h2><table><tr><th>function</th><th>calls</th><th>bytes</th><th>time</th><th>mean</th><th>p50</th><th>p99</th></tr>");
    for f in s.groups.iter().filter(|f| f.calls > 0) {
        let q = |x: f64| f.quantile_ns(x).map_or("-".into(), fmt_ns);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            f.name,
            fmt_count(f.calls),
            if f.name == "free" {
                "-".into()
            } else {
                fmt_bytes(f.bytes)
            },
            ns(f.time_ns),
            fmt_ns(f.mean_ns()),
            q(0.5),
            q(0.99)
        );
    }
    o.push_str("</table>\n");
    let hist_table = |o: &mut String, title: &str, rows: Vec<(String, u64)>| {
        let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
        let _ = write!(o, "<h2>{}</h2><table class=\"hist\">", escape(title));
        for (label, count) in rows {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td class=\"b\"><div class=\"fill\" style=\"width:{:.2}%\"></div></td></tr>",
                escape(&label),
                fmt_count(count),
                100.0 * count as f64 / max as f64
            );
        }
        o.push_str("</table>\n");
    };
    let sizes: Vec<(String, u64)> = s
        .size_hist
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, &c)| {
            let (lo, hi) = size_bucket_range(b);
            (format!("{}–{}", fmt_bytes(lo), fmt_bytes(hi)), c)
        })
        .collect();
    hist_table(&mut o, "Request sizes (calls)", sizes);
    for f in s.groups.iter().filter(|f| !f.latency.is_empty()) {
        let rows = f
            .latency
            .iter()
            .map(|&(lo, hi, c)| (format!("{}–{}", ns(lo), ns(hi)), c))
            .collect();
        hist_table(
            &mut o,
            &format!("Latency of {} (estimated calls)", f.name),
            rows,
        );
    }

    // Locks.
    o.push_str("<h2>Locks</h2>");
    if s.locks.is_empty() {
        o.push_str("<p class=\"muted\">No lock was taken.</p>");
    } else {
        o.push_str("<table><tr><th>lock</th><th>kind</th><th>acquired</th><th>contended</th><th>wait</th><th>max wait</th><th>held</th><th>threads</th><th>top waiting stack</th></tr>");
        for l in &s.locks {
            let site = l
                .sites
                .first()
                .and_then(|x| x.user_frame())
                .map_or("-".into(), frame_name);
            let _ = write!(
                o,
                "<tr><td><code>{:#x}</code></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><code>{}</code></td></tr>",
                l.address,
                l.kind,
                fmt_count(l.acquisitions),
                fmt_count(l.contended),
                ns(l.wait_ns),
                ns(l.max_wait_ns),
                ns(l.hold_ns),
                l.threads,
                escape(&site)
            );
        }
        o.push_str("</table>\n");
    }

    // Phases.
    if !p.phases.phases.is_empty() {
        o.push_str("<h2>Phases</h2><table><tr><th>phase</th><th>thread</th><th>begin</th><th>wall</th><th>malloc calls</th><th>malloc time</th><th>free calls</th><th>free time</th></tr>");
        for ph in &p.phases.phases {
            let f = |n: &str| ph.function(n).map_or((0, 0), |f| (f.calls, f.time_ns));
            let (mc, mt) = f("malloc");
            let (fc, ft) = f("free");
            let _ = write!(
                o,
                "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                "&nbsp;&nbsp;".repeat(ph.depth as usize),
                escape(&ph.label),
                ph.tid,
                ns(ph.begin_ns),
                ns(ph.wall_ns()),
                fmt_count(mc),
                ns(mt),
                fmt_count(fc),
                ns(ft)
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str("<p class=\"muted\">Made by stallscope html.</p></body></html>\n");
    o
}

pub fn main(args: HtmlArgs) -> Result<i32> {
    let loaded = Loaded::read(&args.file)?;
    std::fs::write(&args.output, render(&loaded))
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(0)
}
