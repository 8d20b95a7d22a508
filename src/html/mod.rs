//! `stallscope html FILE -o OUT.html`: one self-contained page (inline CSS, nothing fetched):
//! the findings, overview figures, the per-thread timeline with phases, per-thread bars, SVG
//! flame graphs of allocation sites (time, calls or bytes), lock waits, sampled CPU time and
//! off-CPU time by state, histograms of request sizes and latencies, the lock table, the phases
//! and the heap snapshots. Light or dark by the reader's `prefers-color-scheme`; every control is
//! a link, a radio button or a `<details>`, so the keyboard reaches and operates all of them
//! without a script. The one script, a few lines inline, is the flame graphs' search box: it
//! outlines the frames whose name contains the text typed (Escape clears it); without it the
//! page loses only the highlighting.

#[cfg(test)]
mod browser;
mod findings;
mod flame;
mod run;
mod style;
#[cfg(test)]
mod tests;
mod timeline;
mod waitfor;

use crate::analysis::Analysis;
use crate::analysis::collapsed::{self, Weight};
use crate::analysis::sampled::SampleWeight;
use crate::analysis::states::Category;
use crate::analysis::threads::ThreadId;
use crate::model::Model;
use crate::model::run::Run;
use crate::profile::format::size_bucket_range;
use crate::util::{escape, fmt_bytes, fmt_count, fmt_ns, fmt_pct, ratio};
use anyhow::{Context, Result};
use std::fmt::Write;
use std::path::PathBuf;
use style::STYLE;

#[derive(clap::Args, Debug)]
pub struct HtmlArgs {
    /// Output file
    #[arg(long, short = 'o')]
    pub output: PathBuf,
    /// Profile file written by `stallscope run`; for a run of several processes, its profile or
    /// its directory (`PROFILE.children/`) adds the run's processes to the page
    pub file: PathBuf,
}

fn card(out: &mut String, label: &str, value: &str) {
    let _ = write!(
        out,
        r#"<div class="card"><span class="muted">{}</span><b>{}</b></div>"#,
        escape(label),
        escape(value)
    );
}

/// The sections in the navigation bar: (element id, link text).
const SECTIONS: [(&str, &str); 7] = [
    ("findings", "Findings"),
    ("overview", "Overview"),
    ("timeline", "Timeline"),
    ("threads", "Threads"),
    ("flames", "Flame graphs"),
    ("functions", "Allocator functions"),
    ("locks", "Locks"),
];

/// The functions most CPU samples were in, with the category each counted as.
fn hot_functions(o: &mut String, r: &crate::analysis::states::StateReport) {
    let total = crate::analysis::summary::sum(r.hot.iter().map(|h| h.samples));
    if total == 0 {
        return;
    }
    o.push_str("<h3>Hottest functions (CPU samples)</h3><table><tr><th>function</th><th>state</th><th>samples</th><th>share</th></tr>");
    for h in r.hot.iter().take(10) {
        let _ = write!(
            o,
            "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&h.function),
            h.category.key(),
            fmt_count(h.samples),
            fmt_pct(ratio(h.samples, total))
        );
    }
    o.push_str("</table>\n");
}

/// Each thread's life relative to the process's start (a thread still running at the end lives
/// until the process ended), for the timeline without thread states.
/// The CPU demand (threads wanting a CPU, and on one), serial sections and load
/// imbalance, from the kernel's figures.
fn utilization_section(
    o: &mut String,
    p: &Analysis,
    c: &crate::analysis::concurrency::Concurrency,
) {
    o.push_str("<h2 id=\"utilization\">CPU demand</h2><p class=\"muted\">How many threads wanted a CPU (on one or runnable) against the CPUs, as shares of the wall time. Not VTune's effective utilization, which counts only useful CPU time: that is the parallel efficiency above.</p>");
    o.push_str("<table><tr><th></th><th>idle</th><th>poor</th><th>ok</th><th>ideal</th><th>over</th><th>mean threads</th></tr>");
    for (label, u) in [
        ("threads wanting a CPU", &c.offered),
        ("threads on a CPU", &c.achieved),
    ] {
        o.push_str(&format!(
            "<tr><td>{label}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>",
            fmt_pct(u.idle),
            fmt_pct(u.poor),
            fmt_pct(u.ok),
            fmt_pct(u.ideal),
            fmt_pct(u.over),
            u.mean
        ));
    }
    o.push_str("</table>");
    o.push_str(&format!(
        "<p class=\"muted\">on {} CPUs; waiting for a CPU: {} because of the program's own threads, {} because of other load</p>",
        c.cpus,
        crate::util::fmt_ns(c.own_runnable_ns),
        crate::util::fmt_ns(c.other_runnable_ns)
    ));
    let states = p.states.as_ref();
    for s in &c.serial {
        let (who, frame) = s.who_and_where(states);
        o.push_str(&format!(
            "<p>serial section {} to {}: {} in {}</p>",
            crate::util::fmt_ns(s.begin_ns),
            crate::util::fmt_ns(s.end_ns),
            escape(&who),
            escape(&frame)
        ));
    }
    if let Some(im) = &c.imbalance {
        o.push_str(&format!(
            "<p>load imbalance: {} sibling threads; the last finished {} after the even-split end; the others idled {}</p>",
            im.members.len(),
            crate::util::fmt_ns(im.excess_ns()),
            crate::util::fmt_ns(im.idle_ns)
        ));
    }
}

fn lifespans(p: &Analysis) -> Vec<timeline::Lifespan> {
    let start = p.profile.process.start_mono_ns;
    p.profile
        .threads
        .iter()
        .map(|t| {
            let end = p.profile.thread_end_ns(t);
            timeline::Lifespan::new(
                ThreadId::of_profile(t),
                t.start_mono_ns.saturating_sub(start),
                end.saturating_sub(start),
            )
        })
        .collect()
}

/// One flame graph of the page.
struct FlameWeight {
    /// In the ids of its radio button (`w-<id>`) and panel (`panel-<id>`).
    id: &'static str,
    label: &'static str,
    weight: Weight,
    /// Formats a value for the tooltips and the table.
    unit: fn(u64) -> String,
}

const WEIGHTS: [FlameWeight; 6] = [
    FlameWeight {
        id: "time",
        label: "time in the allocator",
        weight: Weight::Time,
        unit: fmt_ns,
    },
    FlameWeight {
        id: "calls",
        label: "allocator calls",
        weight: Weight::Calls,
        unit: fmt_count,
    },
    FlameWeight {
        id: "bytes",
        label: "bytes requested",
        weight: Weight::Bytes,
        unit: fmt_bytes,
    },
    FlameWeight {
        id: "lock",
        label: "lock waits",
        weight: Weight::LockWait,
        unit: fmt_ns,
    },
    FlameWeight {
        id: "cpu",
        label: "CPU time",
        weight: Weight::Sampled(SampleWeight::Cpu),
        unit: fmt_ns,
    },
    FlameWeight {
        id: "offcpu",
        label: "off-CPU time by state",
        weight: Weight::Sampled(SampleWeight::OffCpu),
        unit: fmt_ns,
    },
];

/// The search box's script: outlines (class `hit`) the frames whose tooltip starts with a name
/// containing the text, and says how many; Escape empties the box.
const SEARCH_SCRIPT: &str = r#"<script>
(() => {
  const box = document.getElementById('flame-search'), said = document.getElementById('flame-hits');
  const search = () => {
    const q = box.value.trim().toLowerCase(); let n = 0;
    for (const g of document.querySelectorAll('svg.flame g > title')) {
      const name = g.textContent.slice(0, g.textContent.lastIndexOf(': ')).toLowerCase();
      const hit = q !== '' && name.includes(q); g.parentNode.classList.toggle('hit', hit); if (hit) n++;
    }
    said.textContent = q === '' ? '' : n + (n === 1 ? ' frame matches' : ' frames match');
  };
  box.addEventListener('input', search);
  box.addEventListener('keydown', e => { if (e.key === 'Escape') { box.value = ''; search(); } });
})();
</script>"#;

/// Stacks listed in each flame graph's table.
const TABLE_STACKS: usize = 20;

/// The flame graphs, one per weight, switched by radio buttons: CSS shows the panel whose
/// button is `:checked` (`#w-time:checked ~ #panel-time`), so it works without a script and with
/// the keyboard (Tab to the group, arrow keys or Space to pick).
fn flame_section(p: &Analysis) -> String {
    let mut o = String::from(
        "<h2 id=\"flames\">Flame graphs</h2><p class=\"muted\">Allocation sites are estimated from sampled stacks; lock waits are the waiting threads' stacks; CPU time is the sampled running threads' stacks, the hottest function on top; off-CPU time is the stacks of threads found waiting, one tower per state (its root frame). Root at the bottom; hover a frame for its figures, or open the table under each graph. Frames under 0.1% of the width are merged.</p>\n",
    );
    o.push_str("<p class=\"flame-search\"><label for=\"flame-search\">Highlight a function:</label> <input type=\"search\" id=\"flame-search\" aria-describedby=\"flame-hits\" autocomplete=\"off\"> <span id=\"flame-hits\" class=\"muted\" aria-live=\"polite\"></span></p>");
    o.push_str("<div class=\"flames\"><span id=\"weight-name\">Weight:</span>");
    let all: Vec<_> = WEIGHTS
        .iter()
        .map(|w| collapsed::stacks(p, w.weight))
        .collect();
    // The page opens on the heaviest of the time weights that has data (a program that hardly
    // allocates had opened on "No stack has time in the allocator"), else the first with any.
    // Off-CPU time weighs there only as far as it stalled work: time waiting for work or for a
    // client (a server's idle background threads) is no cost, and had opened a server's page on
    // its sleeping threads.
    let total = |i: usize| all[i].values().sum::<u64>();
    let stalled_off_cpu: u64 = crate::analysis::sampled::samples(p)
        .iter()
        .filter(|v| !matches!(v.stack.category, Category::Idle | Category::Blocked))
        .map(|v| SampleWeight::OffCpu.of(v))
        .sum();
    let weighs = |i: usize| match WEIGHTS[i].weight {
        Weight::Sampled(SampleWeight::OffCpu) => stalled_off_cpu.min(total(i)),
        _ => total(i),
    };
    let opened = (0..WEIGHTS.len())
        .filter(|&i| WEIGHTS[i].weight.is_time() && weighs(i) > 0)
        .max_by_key(|&i| weighs(i))
        .or_else(|| (0..WEIGHTS.len()).find(|&i| total(i) > 0))
        .unwrap_or(0);
    for (i, FlameWeight { id, label, .. }) in WEIGHTS.iter().enumerate() {
        let _ = write!(
            o,
            " <input type=\"radio\" name=\"flame-weight\" id=\"w-{id}\" aria-describedby=\"weight-name\"{}><label for=\"w-{id}\">{label}</label>",
            if i == opened { " checked" } else { "" }
        );
    }
    for (
        FlameWeight {
            id, label, unit, ..
        },
        stacks,
    ) in WEIGHTS.iter().zip(all)
    {
        let _ = write!(
            o,
            "<div class=\"flame-panel\" id=\"panel-{id}\" role=\"region\" aria-label=\"flame graph of {label}\">"
        );
        if stacks.is_empty() {
            let _ = write!(o, "<p class=\"muted\">No stack has {label}.</p>");
        } else {
            o.push_str(&flame::svg(&stacks, *unit, label));
            o.push_str(&flame::top_table(&stacks, *unit, TABLE_STACKS));
        }
        o.push_str("</div>");
    }
    o.push_str("</div>\n");
    o.push_str(SEARCH_SCRIPT);
    o
}

/// The page for one profile.
pub fn render(p: &Model) -> String {
    render_page(p, None)
}

/// The page of a profile; of a run of several processes (`run`), with the run's processes above
/// the findings.
pub fn render_page(p: &Model, run: Option<&Run>) -> String {
    let s = &p.summary;
    let mut o = String::new();
    let command = s.command_line();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <meta name=\"color-scheme\" content=\"light dark\">\
         <title>stallscope: {}</title><style>{STYLE}</style></head><body>\n\
         <a class=\"skip\" href=\"#main\">Skip to the content</a>\n<nav class=\"sections\" aria-label=\"sections\">",
        escape(&command)
    );
    let optional = [
        ("phases", "Phases", !p.phases.phases.is_empty()),
        ("heap", "Heap", !p.phases.snapshots.is_empty()),
    ];
    let present = optional.iter().filter(|o| o.2).map(|o| (o.0, o.1));
    for (id, name) in SECTIONS.into_iter().chain(present) {
        let _ = write!(o, "<a href=\"#{id}\">{name}</a>");
    }
    o.push_str("</nav>\n<main id=\"main\" tabindex=\"-1\">\n");
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

    if let Some(b) = s.sandbox {
        let _ = writeln!(
            o,
            "<p><strong>Sandboxed:</strong> {}.</p>",
            escape(&b.describe())
        );
    }
    if let Some(r) = run {
        o.push_str(&run::section(r));
    }
    o.push_str("<h2 id=\"findings\">Findings</h2>");
    o.push_str(&findings::section(&p.findings));

    o.push_str("<h2 id=\"overview\">Overview</h2>");
    o.push_str("<div class=\"cards\">");
    card(&mut o, "wall time", &fmt_ns(s.wall_ns));
    card(&mut o, "threads", &s.thread_count().to_string());
    card(&mut o, "allocator calls", &fmt_count(s.alloc_calls()));
    if s.alloc_on_cpu {
        // The allocator-time finding's figure (the report's header gives the same).
        card(
            &mut o,
            "allocator, of CPU time",
            &fmt_pct(s.alloc_share_of_cpu()),
        );
    } else {
        card(
            &mut o,
            "in the allocator",
            &fmt_pct(s.alloc_share_of_life()),
        );
    }
    card(
        &mut o,
        "waiting for locks",
        &fmt_pct(s.lock_wait_share_of_life()),
    );
    card(
        &mut o,
        "CPU of thread time",
        &fmt_pct(ratio(s.cpu_ns(), s.thread_wall_ns())),
    );
    if let Some(r) = &p.states {
        card(
            &mut o,
            "parallel efficiency",
            &fmt_pct(r.parallel_efficiency()),
        );
    }
    if let Some(e) = &p.efficiency {
        card(&mut o, "working threads' efficiency", &fmt_pct(e.value));
    }
    if let Some(c) = &p.concurrency {
        card(&mut o, "CPU demand", &c.demand());
    }
    o.push_str("</div>\n");
    if let Some(c) = &p.concurrency {
        utilization_section(&mut o, p, c);
    }

    o.push_str("<h2 id=\"timeline\">Timeline</h2>");
    o.push_str(&timeline::section(&timeline::Drawing::of(p), &lifespans(p)));
    if let Some(r) = &p.states {
        hot_functions(&mut o, r);
    }

    // Threads.
    o.push_str("<h2 id=\"threads\">Threads</h2><p class=\"legend muted\">share of each thread's life:<span class=\"cpu\"></span>CPU (other work)<span class=\"alloc\"></span>allocator<span class=\"lock\"></span>lock wait<span style=\"background:var(--idle)\"></span>off CPU</p>");
    o.push_str("<table><tr><th>thread</th><th>life</th><th>CPU</th><th>allocator</th><th>lock wait</th><th style=\"width:40%\"></th></tr>");
    for t in &s.threads {
        let share = |v: u64| ratio(v, t.wall_ns);
        let (alloc, lock) = (share(s.allocator_ns_of(t)), share(t.lock_wait_ns));
        // The bar splits the CPU time: the allocator's part of it is its time on a CPU (without
        // CPU samples the column has the calls' timed length, waits for a CPU inside included).
        let alloc_on_cpu = share(t.alloc_cpu_ns);
        let cpu_other = (share(t.cpu_ns) - alloc_on_cpu).max(0.0);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"bar\">\
             <span class=\"cpu\" style=\"width:{:.2}%\"></span><span class=\"alloc\" style=\"width:{:.2}%\"></span>\
             <span class=\"lock\" style=\"width:{:.2}%\"></span></div></td></tr>",
            escape(&ThreadId::of_summary(t).label()),
            fmt_ns(t.wall_ns),
            fmt_pct(share(t.cpu_ns)),
            fmt_pct(alloc),
            fmt_pct(lock),
            (cpu_other * 100.0).min(100.0),
            (alloc_on_cpu * 100.0).min(100.0),
            (lock * 100.0)
                .min(100.0 - (cpu_other + alloc_on_cpu) * 100.0)
                .max(0.0),
        );
    }
    o.push_str("</table>\n");

    o.push_str(&flame_section(p));

    // Allocator functions and histograms.
    o.push_str("<h2 id=\"functions\">Allocator functions</h2><table><tr><th>function</th><th>calls</th><th>bytes</th><th>time</th><th>mean</th><th>p50</th><th>p99</th></tr>");
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
            fmt_ns(f.time_ns),
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
            .map(|&(lo, hi, c)| (format!("{}–{}", fmt_ns(lo), fmt_ns(hi)), c))
            .collect();
        hist_table(
            &mut o,
            &format!("Latency of {} (estimated calls)", f.name),
            rows,
        );
    }

    // Locks.
    o.push_str("<h2 id=\"locks\">Locks</h2>");
    if s.locks.is_empty() && s.unhooked_locks.is_empty() {
        o.push_str("<p class=\"muted\">No lock was taken.</p>");
    } else {
        o.push_str("<table><tr><th>lock</th><th>kind</th><th>acquired</th><th>contended</th><th>wait</th><th>max wait</th><th>held</th><th>threads</th><th>top waiting stack</th></tr>");
        for l in &s.locks {
            let site = l
                .sites
                .first()
                .and_then(|x| x.user_frame())
                .map_or("-".into(), crate::symbols::Frame::name);
            let _ = write!(
                o,
                "<tr><td><code>{}</code></td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\"><code>{}</code></td></tr>",
                escape(&p.object_name(l.address)),
                escape(l.kind_text()),
                fmt_count(l.acquisitions),
                fmt_count(l.contended),
                fmt_ns(l.wait_ns),
                fmt_ns(l.max_wait_ns),
                l.hold_known().map_or("-".into(), |h| fmt_ns(h as f64)),
                l.threads,
                escape(&site)
            );
        }
        // Waits no hook timed: estimated from the thread states' samples.
        for l in &s.unhooked_locks {
            let site = l
                .user_frame()
                .map_or("-".into(), crate::symbols::Frame::name);
            let _ = write!(
                o,
                "<tr><td><code>{}</code></td><td class=\"l\">seen by sampling</td><td>-</td><td>-</td><td>~{}</td><td>-</td><td>-</td><td>{}</td><td class=\"l\"><code>{}</code></td></tr>",
                escape(&l.name),
                fmt_ns(l.wait_ns),
                l.threads,
                escape(&site)
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str(&waitfor::section(p));

    // Phases.
    if !p.phases.phases.is_empty() {
        o.push_str("<h2 id=\"phases\">Phases</h2><table><tr><th>phase</th><th>thread</th><th>begin</th><th>wall</th><th>malloc calls</th><th>malloc time</th><th>free calls</th><th>free time</th></tr>");
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
                fmt_ns(ph.begin_ns),
                fmt_ns(ph.wall_ns()),
                fmt_count(mc),
                fmt_ns(mt),
                fmt_count(fc),
                fmt_ns(ft)
            );
        }
        o.push_str("</table>\n");
    }
    o.push_str(&heap_section(p));
    o.push_str("<p class=\"muted\">Made by stallscope html.</p></main></body></html>\n");
    o
}

/// The heap snapshots over time (empty without snapshots): what glibc's arenas held and the
/// process's resident size at each, with a bar of bytes in use against the largest RSS.
fn heap_section(p: &Analysis) -> String {
    let snapshots = &p.phases.snapshots;
    if snapshots.is_empty() {
        return String::new();
    }
    let start = p.profile.process.start_mono_ns;
    let largest = snapshots
        .iter()
        .map(|h| h.rss_bytes.max(h.in_use_bytes()))
        .max()
        .unwrap_or(0)
        .max(1);
    let mut o = String::from(
        "<h2 id=\"heap\">Heap snapshots</h2><p class=\"legend muted\">bytes against the largest resident size:<span class=\"alloc\"></span>in use<span class=\"cpu\"></span>free in the arenas</p><table><tr><th>snapshot</th><th>thread</th><th>at</th><th>in use</th><th>free in arenas</th><th>fragmentation</th><th>resident</th><th style=\"width:30%\"></th></tr>",
    );
    for h in snapshots {
        let share = |v: u64| 100.0 * v as f64 / largest as f64;
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"bar\">\
             <span class=\"alloc\" style=\"width:{:.2}%\"></span><span class=\"cpu\" style=\"width:{:.2}%\"></span></div></td></tr>",
            escape(&h.label),
            h.tid,
            fmt_ns(h.mono_ns.saturating_sub(start)),
            fmt_bytes(h.in_use_bytes()),
            fmt_bytes(h.free_bytes),
            fmt_pct(h.fragmentation()),
            fmt_bytes(h.rss_bytes),
            share(h.in_use_bytes()),
            share(h.free_bytes).min(100.0 - share(h.in_use_bytes())),
        );
    }
    o.push_str("</table>\n");
    o
}

pub fn main(args: HtmlArgs) -> Result<i32> {
    // A run of several processes: the page of the launched process (or, without it, of the
    // process with the most CPU time), with the run's processes above its findings.
    let page = match crate::model::run::load(&args.file)? {
        None => render(&Model::read(&args.file)?),
        Some(r) => {
            let main = match r.launched()? {
                Some(launched) => launched,
                None => r.main.as_ref().ok_or_else(|| {
                    anyhow::anyhow!("no readable profile in {}", args.file.display())
                })?,
            };
            render_page(main, Some(&r))
        }
    };
    std::fs::write(&args.output, page)
        .with_context(|| format!("writing {}", args.output.display()))?;
    Ok(0)
}
