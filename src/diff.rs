//! `stallscope diff BEFORE AFTER`: two profiles of the same program compared — wall time,
//! allocator calls, bytes and time per function group, lock wait, each category's share of the
//! threads' time (all threads, and thread by thread in order of creation), and the allocation
//! sites that appeared, vanished or changed most, and the functions whose share of the sampled
//! CPU time grew or shrank most (by self time: the function at the sampled instruction). Ratios
//! are after / before.
//!
//! Sites are matched by their user frame (function and file:line) and allocator function when the
//! user frame is symbolized, else by their whole stack (`module+offset` frames are stable between
//! runs of the same binary).

use crate::analysis::Analysis;
use crate::analysis::sampled::SampleWeight;
use crate::analysis::sites::SiteSummary;
use crate::analysis::states::{CATEGORIES, CATEGORY_COUNT, PerCategory, ThreadStates};
use crate::analysis::summary::{Summary, ThreadSummary, sum};
use crate::analysis::threads::ThreadId;
use crate::model::json::Named;
use crate::util::{Style, fmt_bytes, fmt_count, fmt_ns, fmt_pct, ratio};
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// Print JSON (schema stallscope.diff/1) instead of the terminal tables
    #[arg(long)]
    pub json: bool,
    /// How many sites to list as changed most
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// The profile before the change
    pub before: PathBuf,
    /// The profile after the change
    pub after: PathBuf,
}

/// A figure in both profiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub before: u64,
    pub after: u64,
}

impl Pair {
    pub fn new(before: u64, after: u64) -> Pair {
        Pair { before, after }
    }
    /// after / before (none when before is zero).
    pub fn ratio(&self) -> Option<f64> {
        (self.before > 0).then(|| self.after as f64 / self.before as f64)
    }
    pub fn delta(&self) -> i128 {
        self.after as i128 - self.before as i128
    }
    fn json(&self) -> PairJson {
        PairJson {
            before: self.before,
            after: self.after,
            ratio: self.ratio(),
        }
    }
}

/// A figure in both profiles, as JSON.
#[derive(Serialize)]
struct PairJson {
    before: u64,
    after: u64,
    /// after / before (null when before is zero).
    ratio: Option<f64>,
}

/// Shares of a thread's (or all threads') lifetime: on CPU, in the allocator, waiting for locks
/// (measured by the hooks), and in each thread state (sampled, when both runs were).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shares {
    pub cpu: f64,
    pub allocator: f64,
    pub lock_wait: f64,
    /// Indexed like `CATEGORIES`.
    pub states: Option<PerCategory<f64>>,
}

impl Shares {
    /// `on_cpu`: the allocator's time is its time on a CPU (`alloc_cpu_ns`, from CPU samples),
    /// as both profiles' reports show it; else the calls' timed length.
    fn of(threads: &[&ThreadSummary], states: &[&ThreadStates], on_cpu: bool) -> Shares {
        let wall = sum(threads.iter().map(|t| t.wall_ns));
        let total = |f: &dyn Fn(&ThreadSummary) -> u64| sum(threads.iter().map(|t| f(t)));
        let life = sum(states.iter().map(|t| t.life_ns));
        Shares {
            cpu: ratio(total(&|t| t.cpu_ns), wall),
            allocator: ratio(total(&|t| t.allocator_ns(on_cpu)), wall),
            lock_wait: ratio(total(&|t| t.lock_wait_ns), wall),
            states: (!states.is_empty()).then(|| {
                std::array::from_fn::<f64, CATEGORY_COUNT, _>(|c| {
                    ratio(sum(states.iter().map(|t| t.ns[c])), life)
                })
            }),
        }
    }
    fn json(&self) -> SharesJson {
        SharesJson {
            cpu: self.cpu,
            allocator: self.allocator,
            lock_wait: self.lock_wait,
            states: self.states.map(|states| {
                Named(
                    CATEGORIES
                        .iter()
                        .map(|c| (c.key(), states[c.index()]))
                        .collect(),
                )
            }),
        }
    }
}

/// Shares as JSON: `states` by each category's key, when both runs were sampled.
#[derive(Serialize)]
struct SharesJson {
    cpu: f64,
    allocator: f64,
    lock_wait: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    states: Option<Named<f64>>,
}

/// The sampled states of a summary's thread (joined by its serial).
fn states_of<'a>(a: &'a Analysis, t: &ThreadSummary) -> Vec<&'a ThreadStates> {
    a.states_of(t.serial).into_iter().collect()
}

#[derive(Debug, Clone)]
pub struct ThreadDiff {
    /// The thread's label (`ThreadId::label`) in the first run, else in the second. Threads are
    /// paired across the runs by name, main or not, and rank among threads of that name (tids
    /// differ from run to run).
    pub label: String,
    pub before: Option<Shares>,
    pub after: Option<Shares>,
}

#[derive(Debug, Clone)]
pub struct GroupDiff {
    pub name: &'static str,
    pub calls: Pair,
    pub bytes: Pair,
    pub time_ns: Pair,
}

/// Allocation sites with the same key, summed.
#[derive(Debug, Clone)]
pub struct SiteDiff {
    pub key: String,
    pub calls: Pair,
    pub bytes: Pair,
    pub time_ns: Pair,
}

#[derive(Debug, Clone)]
pub struct Diff {
    /// Functions by the change of their share of CPU time, largest change first.
    pub cpu_functions: Vec<CpuFunctionDiff>,
    pub before_path: String,
    pub after_path: String,
    pub wall_ns: Pair,
    pub groups: Vec<GroupDiff>,
    pub alloc_calls: Pair,
    /// The allocator's time: on a CPU where `alloc_on_cpu`, else the calls' timed length.
    pub alloc_ns: Pair,
    pub alloc_on_cpu: bool,
    pub lock_wait_ns: Pair,
    pub all_threads: (Shares, Shares),
    pub threads: Vec<ThreadDiff>,
    /// Sites only in the after profile, heaviest (by time) first.
    pub appeared: Vec<SiteDiff>,
    /// Sites only in the before profile, heaviest first.
    pub vanished: Vec<SiteDiff>,
    /// Sites in both, by how much their time changed (absolute difference), most first.
    pub changed: Vec<SiteDiff>,
}

/// The key a site is matched by between profiles.
pub fn site_key(s: &SiteSummary) -> String {
    match s.user_frame() {
        Some(f) if f.function.is_some() => {
            let place = match (&f.file, f.line) {
                (Some(file), Some(line)) => {
                    format!(" ({}:{line})", crate::symbols::file_name(file))
                }
                (Some(file), None) => format!(" ({})", crate::symbols::file_name(file)),
                _ => String::new(),
            };
            format!("{}{place} -> {}", f.name(), s.function)
        }
        _ => {
            let mut names: Vec<String> = s.frames.iter().rev().map(|f| f.name()).collect();
            names.push(s.function.to_string());
            names.join(";")
        }
    }
}

/// What pairs a thread across two runs: its name, whether it is the main thread or a folded
/// group, and its rank among the threads alike in these.
type ThreadKey<'a> = (&'a str, bool, bool, usize);

fn thread_keys(s: &Summary) -> Vec<(ThreadKey<'_>, &ThreadSummary)> {
    let mut out: Vec<(ThreadKey<'_>, &ThreadSummary)> = Vec::new();
    for t in &s.threads {
        let (name, main, folded) = (t.name.as_str(), t.main, t.folded.is_some());
        let k = out
            .iter()
            .filter(|(key, _)| (key.0, key.1, key.2) == (name, main, folded))
            .count();
        out.push(((name, main, folded, k), t));
    }
    out
}

fn sites_by_key(s: &Summary) -> Vec<(String, u64, u64, u64)> {
    let mut out: Vec<(String, u64, u64, u64)> = Vec::new();
    for site in &s.alloc_sites {
        let key = site_key(site);
        match out.iter_mut().find(|x| x.0 == key) {
            Some(x) => {
                x.1 = x.1.saturating_add(site.calls);
                x.2 = x.2.saturating_add(site.bytes);
                x.3 = x.3.saturating_add(site.time_ns);
            }
            None => out.push((key, site.calls, site.bytes, site.time_ns)),
        }
    }
    out
}

/// One function's self CPU time in both runs, and its share of each run's CPU time.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuFunctionDiff {
    pub function: String,
    pub ns: Pair,
    pub share_before: f64,
    pub share_after: f64,
}

impl CpuFunctionDiff {
    pub fn share_delta(&self) -> f64 {
        self.share_after - self.share_before
    }
}

/// Self CPU time per function (the sampled instruction's frame), and the total.
fn cpu_by_function(a: &Analysis) -> (std::collections::BTreeMap<String, u64>, u64) {
    let mut out = std::collections::BTreeMap::new();
    let mut total = 0u64;
    for v in crate::analysis::sampled::samples(a) {
        let ns = SampleWeight::Cpu.of(&v);
        if ns == 0 {
            continue;
        }
        let name = v.stack.frames.first().map_or_else(
            || "[unknown]".to_string(),
            crate::analysis::collapsed::frame_name,
        );
        let e: &mut u64 = out.entry(name).or_default();
        *e = e.saturating_add(ns);
        total = total.saturating_add(ns);
    }
    (out, total)
}

/// The `top` functions whose share of CPU time changed most (appearing and vanishing ones too).
pub fn compare_cpu(before: &Analysis, after: &Analysis, top: usize) -> Vec<CpuFunctionDiff> {
    let ((fb, tb), (fa, ta)) = (cpu_by_function(before), cpu_by_function(after));
    let mut names: Vec<&String> = fb.keys().chain(fa.keys()).collect();
    names.sort();
    names.dedup();
    let mut out: Vec<CpuFunctionDiff> = names
        .into_iter()
        .map(|name| {
            let (b, a) = (
                fb.get(name).copied().unwrap_or(0),
                fa.get(name).copied().unwrap_or(0),
            );
            CpuFunctionDiff {
                function: name.clone(),
                ns: Pair::new(b, a),
                share_before: ratio(b, tb),
                share_after: ratio(a, ta),
            }
        })
        .collect();
    out.sort_by(|p, q| {
        q.share_delta()
            .abs()
            .total_cmp(&p.share_delta().abs())
            .then(p.function.cmp(&q.function))
    });
    out.truncate(top);
    out
}

pub fn compare(before: &Analysis, after: &Analysis, top: usize) -> Diff {
    let (b, a) = (&before.summary, &after.summary);
    // One figure for the allocator's time on both sides: its time on a CPU where both profiles
    // have it from samples (what their reports show), else the calls' timed length.
    let on_cpu = b.alloc_on_cpu && a.alloc_on_cpu;
    let groups = b
        .groups
        .iter()
        .zip(&a.groups)
        .map(|(gb, ga)| GroupDiff {
            name: gb.name,
            calls: Pair::new(gb.calls, ga.calls),
            bytes: Pair::new(gb.bytes, ga.bytes),
            time_ns: Pair::new(gb.time_ns, ga.time_ns),
        })
        .collect();
    let (lb, la) = (thread_keys(b), thread_keys(a));
    let mut threads: Vec<ThreadDiff> = lb
        .iter()
        .map(|(key, t)| ThreadDiff {
            label: ThreadId::of_summary(t).label(),
            before: Some(Shares::of(&[t], &states_of(before, t), on_cpu)),
            after: la
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, t)| Shares::of(&[t], &states_of(after, t), on_cpu)),
        })
        .collect();
    for (key, t) in &la {
        if !lb.iter().any(|(k, _)| k == key) {
            threads.push(ThreadDiff {
                label: ThreadId::of_summary(t).label(),
                before: None,
                after: Some(Shares::of(&[t], &states_of(after, t), on_cpu)),
            });
        }
    }
    let (sb, sa) = (sites_by_key(b), sites_by_key(a));
    let pair_site =
        |key: &str, x: Option<&(String, u64, u64, u64)>, y: Option<&(String, u64, u64, u64)>| {
            let v = |s: Option<&(String, u64, u64, u64)>| s.map_or((0, 0, 0), |s| (s.1, s.2, s.3));
            let (xb, yb) = (v(x), v(y));
            SiteDiff {
                key: key.to_string(),
                calls: Pair::new(xb.0, yb.0),
                bytes: Pair::new(xb.1, yb.1),
                time_ns: Pair::new(xb.2, yb.2),
            }
        };
    let mut appeared = Vec::new();
    let mut vanished = Vec::new();
    let mut changed = Vec::new();
    for s in &sb {
        match sa.iter().find(|x| x.0 == s.0) {
            Some(x) => changed.push(pair_site(&s.0, Some(s), Some(x))),
            None => vanished.push(pair_site(&s.0, Some(s), None)),
        }
    }
    for x in &sa {
        if !sb.iter().any(|s| s.0 == x.0) {
            appeared.push(pair_site(&x.0, None, Some(x)));
        }
    }
    appeared.sort_by(|p, q| {
        q.time_ns
            .after
            .cmp(&p.time_ns.after)
            .then(p.key.cmp(&q.key))
    });
    vanished.sort_by(|p, q| {
        q.time_ns
            .before
            .cmp(&p.time_ns.before)
            .then(p.key.cmp(&q.key))
    });
    changed.sort_by(|p, q| {
        q.time_ns
            .delta()
            .abs()
            .cmp(&p.time_ns.delta().abs())
            .then(p.key.cmp(&q.key))
    });
    appeared.truncate(top);
    vanished.truncate(top);
    changed.truncate(top);
    let all = |l: &Analysis| {
        let states: Vec<&ThreadStates> = l.states.iter().flat_map(|r| &r.threads).collect();
        Shares::of(
            &l.summary.threads.iter().collect::<Vec<_>>(),
            &states,
            on_cpu,
        )
    };
    Diff {
        cpu_functions: compare_cpu(before, after, top),
        before_path: before.path.clone(),
        after_path: after.path.clone(),
        wall_ns: Pair::new(b.wall_ns, a.wall_ns),
        groups,
        alloc_calls: Pair::new(b.alloc_calls(), a.alloc_calls()),
        alloc_ns: Pair::new(b.allocator_ns_on(on_cpu), a.allocator_ns_on(on_cpu)),
        alloc_on_cpu: on_cpu,
        lock_wait_ns: Pair::new(b.lock_wait_ns(), a.lock_wait_ns()),
        all_threads: (all(before), all(after)),
        threads,
        appeared,
        vanished,
        changed,
    }
}

/// The diff as JSON (schema `stallscope.diff/1`).
#[derive(Serialize)]
pub struct DiffJson<'a> {
    schema: &'static str,
    before: &'a str,
    after: &'a str,
    wall_ns: PairJson,
    alloc: AllocJson,
    lock_wait_ns: PairJson,
    threads: ThreadsJson<'a>,
    sites: SitesJson<'a>,
    cpu_functions: Vec<CpuFunctionJson<'a>>,
}

#[derive(Serialize)]
struct AllocJson {
    calls: PairJson,
    time_ns: PairJson,
    /// `time_ns` is the allocator's time on a CPU, from CPU samples (else the calls' timed
    /// length).
    time_on_cpu: bool,
    /// By function group's name.
    groups: Named<GroupJson>,
}

#[derive(Serialize)]
struct GroupJson {
    calls: PairJson,
    bytes: PairJson,
    time_ns: PairJson,
}

#[derive(Serialize)]
struct ThreadsJson<'a> {
    all: BeforeAfter<SharesJson>,
    each: Vec<ThreadJson<'a>>,
}

#[derive(Serialize)]
struct BeforeAfter<T> {
    before: T,
    after: T,
}

#[derive(Serialize)]
struct ThreadJson<'a> {
    label: &'a str,
    before: Option<SharesJson>,
    after: Option<SharesJson>,
}

#[derive(Serialize)]
struct SitesJson<'a> {
    appeared: Vec<SiteJson<'a>>,
    vanished: Vec<SiteJson<'a>>,
    changed: Vec<SiteJson<'a>>,
}

#[derive(Serialize)]
struct SiteJson<'a> {
    site: &'a str,
    calls: PairJson,
    bytes: PairJson,
    time_ns: PairJson,
}

impl<'a> SiteJson<'a> {
    fn list(sites: &'a [SiteDiff]) -> Vec<SiteJson<'a>> {
        sites
            .iter()
            .map(|s| SiteJson {
                site: &s.key,
                calls: s.calls.json(),
                bytes: s.bytes.json(),
                time_ns: s.time_ns.json(),
            })
            .collect()
    }
}

#[derive(Serialize)]
struct CpuFunctionJson<'a> {
    function: &'a str,
    ns: PairJson,
    share: BeforeAfter<f64>,
}

pub fn to_json(d: &Diff) -> DiffJson<'_> {
    DiffJson {
        schema: "stallscope.diff/1",
        before: &d.before_path,
        after: &d.after_path,
        wall_ns: d.wall_ns.json(),
        alloc: AllocJson {
            calls: d.alloc_calls.json(),
            time_ns: d.alloc_ns.json(),
            time_on_cpu: d.alloc_on_cpu,
            groups: Named(
                d.groups
                    .iter()
                    .map(|g| {
                        let group = GroupJson {
                            calls: g.calls.json(),
                            bytes: g.bytes.json(),
                            time_ns: g.time_ns.json(),
                        };
                        (g.name, group)
                    })
                    .collect(),
            ),
        },
        lock_wait_ns: d.lock_wait_ns.json(),
        threads: ThreadsJson {
            all: BeforeAfter {
                before: d.all_threads.0.json(),
                after: d.all_threads.1.json(),
            },
            each: d
                .threads
                .iter()
                .map(|t| ThreadJson {
                    label: &t.label,
                    before: t.before.map(|s| s.json()),
                    after: t.after.map(|s| s.json()),
                })
                .collect(),
        },
        sites: SitesJson {
            appeared: SiteJson::list(&d.appeared),
            vanished: SiteJson::list(&d.vanished),
            changed: SiteJson::list(&d.changed),
        },
        cpu_functions: d
            .cpu_functions
            .iter()
            .map(|f| CpuFunctionJson {
                function: &f.function,
                ns: f.ns.json(),
                share: BeforeAfter {
                    before: f.share_before,
                    after: f.share_after,
                },
            })
            .collect(),
    }
}

fn fmt_ratio(p: &Pair) -> String {
    match p.ratio() {
        Some(r) => format!("{r:.2}x"),
        None if p.after == 0 => "-".into(),
        None => "new".into(),
    }
}

fn row(out: &mut String, label: &str, p: &Pair, fmt: fn(u64) -> String) {
    let _ = writeln!(
        out,
        "  {label:<22} {:>14} {:>14} {:>9}",
        fmt(p.before),
        fmt(p.after),
        fmt_ratio(p)
    );
}

fn shares_cells(s: Option<Shares>) -> [String; 3] {
    match s {
        Some(s) => [fmt_pct(s.cpu), fmt_pct(s.allocator), fmt_pct(s.lock_wait)],
        None => ["-".into(), "-".into(), "-".into()],
    }
}

pub fn render_text(d: &Diff, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}\n  before  {}\n  after   {}\n",
        style.bold("stallscope diff"),
        d.before_path,
        d.after_path
    );
    let _ = writeln!(
        out,
        "{}",
        style.bold(&format!(
            "  {:<22} {:>14} {:>14} {:>9}",
            "", "before", "after", "ratio"
        ))
    );
    row(&mut out, "wall time", &d.wall_ns, fmt_ns);
    row(&mut out, "allocator calls", &d.alloc_calls, fmt_count);
    row(
        &mut out,
        if d.alloc_on_cpu {
            "allocator on a CPU"
        } else {
            "allocator time"
        },
        &d.alloc_ns,
        fmt_ns,
    );
    row(&mut out, "lock wait", &d.lock_wait_ns, fmt_ns);
    for g in &d.groups {
        if g.calls.before == 0 && g.calls.after == 0 {
            continue;
        }
        row(&mut out, &format!("{} calls", g.name), &g.calls, fmt_count);
        if g.name != "free" {
            row(&mut out, &format!("{} bytes", g.name), &g.bytes, fmt_bytes);
        }
        row(&mut out, &format!("{} time", g.name), &g.time_ns, fmt_ns);
    }
    let _ = writeln!(
        out,
        "\n{}",
        style.bold("Shares of thread time (before -> after)")
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>17} {:>17} {:>17}",
        "thread", "CPU", "allocator", "lock wait"
    );
    let mut share_row = |label: &str, b: Option<Shares>, a: Option<Shares>| {
        let (b, a) = (shares_cells(b), shares_cells(a));
        let cells: Vec<String> = (0..3).map(|i| format!("{} -> {}", b[i], a[i])).collect();
        let _ = writeln!(
            out,
            "  {label:<22} {:>17} {:>17} {:>17}",
            cells[0], cells[1], cells[2]
        );
    };
    share_row("all threads", Some(d.all_threads.0), Some(d.all_threads.1));
    for t in &d.threads {
        share_row(&t.label, t.before, t.after);
    }
    render_state_shares(&mut out, d, style);
    render_cpu_functions(&mut out, d, style);
    for (title, list) in [
        ("Allocation sites that changed most (by time)", &d.changed),
        ("Allocation sites that appeared", &d.appeared),
        ("Allocation sites that vanished", &d.vanished),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}", style.bold(title));
        let _ = writeln!(
            out,
            "  {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}  site",
            "calls", "calls", "ratio", "time", "time", "ratio"
        );
        for s in list {
            let _ = writeln!(
                out,
                "  {:>12} {:>12} {:>8} {:>12} {:>12} {:>8}  {}",
                fmt_count(s.calls.before),
                fmt_count(s.calls.after),
                fmt_ratio(&s.calls),
                fmt_ns(s.time_ns.before),
                fmt_ns(s.time_ns.after),
                fmt_ratio(&s.time_ns),
                s.key
            );
        }
    }
    out
}

/// The functions whose share of CPU time changed most.
fn render_cpu_functions(out: &mut String, d: &Diff, style: Style) {
    if d.cpu_functions.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n{}",
        style.bold("CPU time by function (self), largest change of share first")
    );
    let _ = writeln!(
        out,
        "  {:>10} {:>10} {:>8} {:>8} {:>9}  function",
        "before", "after", "share", "share", "change"
    );
    for f in &d.cpu_functions {
        let _ = writeln!(
            out,
            "  {:>10} {:>10} {:>8} {:>8} {:>+8.1}%  {}",
            fmt_ns(f.ns.before),
            fmt_ns(f.ns.after),
            fmt_pct(f.share_before),
            fmt_pct(f.share_after),
            100.0 * f.share_delta(),
            f.function
        );
    }
}

/// The sampled thread states, before -> after, for the categories either run shows.
fn render_state_shares(out: &mut String, d: &Diff, style: Style) {
    let (Some(b), Some(a)) = (d.all_threads.0.states, d.all_threads.1.states) else {
        return;
    };
    let shown: Vec<usize> = (0..CATEGORIES.len())
        .filter(|&c| b[c] >= 0.0005 || a[c] >= 0.0005)
        .collect();
    let _ = writeln!(
        out,
        "\n{}",
        style.bold("Thread states, sampled (before -> after)")
    );
    let mut line = format!("  {:<22}", "thread");
    for &c in &shown {
        let _ = write!(line, " {:>17}", CATEGORIES[c].key());
    }
    let _ = writeln!(out, "{line}");
    let cell = |s: Option<Shares>, c: usize| {
        s.and_then(|s| s.states)
            .map_or("-".into(), |v| fmt_pct(v[c]))
    };
    let rows = std::iter::once(("all threads", Some(d.all_threads.0), Some(d.all_threads.1)))
        .chain(
            d.threads
                .iter()
                .map(|t| (t.label.as_str(), t.before, t.after)),
        );
    for (label, before, after) in rows {
        let mut line = format!("  {label:<22}");
        for &c in &shown {
            let _ = write!(
                line,
                " {:>17}",
                format!("{} -> {}", cell(before, c), cell(after, c))
            );
        }
        let _ = writeln!(out, "{line}");
    }
}

pub fn main(args: DiffArgs) -> Result<i32> {
    let before = Analysis::read(&args.before)?;
    let after = Analysis::read(&args.after)?;
    let d = compare(&before, &after, args.top);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&to_json(&d))?)?;
    } else {
        write!(stdout, "{}", render_text(&d, Style::for_stdout()))?;
    }
    Ok(0)
}
