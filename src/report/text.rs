//! The terminal report: overview, threads, allocator functions, request sizes, locks.

use crate::analysis::Analysis;
use crate::analysis::sites::{SiteGroup, group_by_user_frame};
use crate::analysis::summary::{Summary, sum};
use crate::analysis::threads::ThreadId;
use crate::util::{Style, bar, fmt_bytes, fmt_count, fmt_ns, fmt_pct, ratio};
use std::fmt::Write;

/// Display rows of the size histogram: fine at the small end, where small-allocation problems
/// live, coarser above (the JSON keeps every bucket).
const SIZE_ROWS: [(u64, u64); 10] = [
    (0, 8),
    (9, 16),
    (17, 24),
    (25, 32),
    (33, 48),
    (49, 64),
    (65, 96),
    (97, 128),
    (129, 192),
    (193, 256),
];

/// The overview, threads, allocator functions, request sizes, allocation sites and locks.
pub fn render(a: &Analysis, style: Style, stacks: bool) -> String {
    let (s, path) = (&a.summary, a.path.as_str());
    let mut o = String::new();
    overview(&mut o, s, path, style);
    if let Some(hint) =
        crate::analysis::locknames::missing_names_hint(a.states.as_ref(), &a.profile.modules)
    {
        let _ = writeln!(o, "  {}", style.dim(&hint));
    }
    threads(&mut o, s, style);
    functions(&mut o, s, style);
    sizes(&mut o, s, style);
    alloc_sites(&mut o, s, style, stacks);
    locks(&mut o, s, style, stacks);
    omp_regions(&mut o, s, style);
    o
}

const TOP_SITES: usize = 10;

fn alloc_sites(o: &mut String, s: &Summary, style: Style, stacks: bool) {
    let Some(sampling) = s.stack_sampling else {
        return;
    };
    if s.alloc_sites.is_empty() {
        return;
    }
    let groups = group_by_user_frame(&s.alloc_sites);
    let from = if sampling.bytes_from > 0 {
        format!(" in requests of {} or more", fmt_bytes(sampling.bytes_from))
    } else {
        String::new()
    };
    let mut rate = format!(
        "stacks of 1 call in {} and 1 per {} allocated{from}; estimates",
        fmt_count(u64::from(sampling.count_period)),
        fmt_bytes(sampling.mean_bytes)
    );
    if sampling.dropped > 0 {
        rate.push_str(&format!(
            "; {} samples lost to a full stack table",
            fmt_count(sampling.dropped)
        ));
    }
    type Key = fn(&SiteGroup) -> u64;
    let orders: [(&str, Key); 3] = [
        ("by estimated time", |g| g.time_ns),
        ("by calls", |g| g.calls),
        ("by bytes", |g| g.bytes),
    ];
    for (title, key) in orders {
        heading(o, style, &format!("Allocation sites {title}"));
        let _ = writeln!(o, "  {}", style.dim(&rate));
        let mut order: Vec<&SiteGroup> = groups.iter().collect();
        order.sort_by_key(|g| std::cmp::Reverse(key(g)));
        let _ = writeln!(
            o,
            "  {:>11} {:>12} {:>11} {:>8}  site",
            "time", "calls", "bytes", "samples"
        );
        for g in order.iter().take(TOP_SITES) {
            let _ = writeln!(
                o,
                "  {:>11} {:>12} {:>11} {:>8}  {}",
                fmt_ns(g.time_ns),
                fmt_count(g.calls),
                fmt_bytes(g.bytes),
                fmt_count(g.samples),
                g.label
            );
            if stacks {
                let site = &s.alloc_sites[g.members[0]];
                for (i, f) in site.frames.iter().enumerate() {
                    let mark = if i == site.user { ">" } else { " " };
                    let inl = if f.inlined { " [inlined]" } else { "" };
                    let _ = writeln!(o, "      {mark} {}{inl}", f.display());
                }
                if g.members.len() > 1 {
                    let _ = writeln!(
                        o,
                        "      {}",
                        style.dim(&format!(
                            "(and {} other stacks through this frame)",
                            g.members.len() - 1
                        ))
                    );
                }
            }
        }
        if order.len() > TOP_SITES {
            let _ = writeln!(
                o,
                "  {}",
                style.dim(&format!(
                    "... and {} more sites (see --json)",
                    order.len() - TOP_SITES
                ))
            );
        }
    }
}

/// What an attached profile covers, and what it cannot have seen.
pub fn attach_text(a: &crate::analysis::summary::AttachSummary) -> String {
    let mut notes = Vec::new();
    if a.window > 1 {
        notes.push(format!("window {}", a.window));
    }
    if a.how == "injected" {
        notes.push("interposer loaded with ptrace".to_string());
    }
    let which = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    format!(
        "for {} of the process's {}{which}; allocations made before the window and locks held at its start are not seen",
        fmt_secs(a.window_ns),
        fmt_secs(a.process_ns)
    )
}

fn fmt_secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

fn heading(o: &mut String, style: Style, title: &str) {
    let _ = writeln!(o, "\n{}", style.bold(title));
}

fn overview(o: &mut String, s: &Summary, path: &str, style: Style) {
    let _ = writeln!(o, "{} {}", style.bold("stallscope profile"), path);
    let _ = writeln!(o, "  command     {}", s.command_line());
    let ended = match (s.exit_code, s.signal) {
        (_, Some(sig)) => format!("killed by signal {sig}"),
        (Some(code), None) => format!("exit status {code}"),
        (None, None) if s.ended_by_exec => "replaced itself by exec".to_string(),
        (None, None) if s.attach.is_some_and(|a| a.detached) => {
            "went on running after the window".to_string()
        }
        (None, None) => "unknown".to_string(),
    };
    let _ = writeln!(o, "  pid         {} (parent {}), {}", s.pid, s.ppid, ended);
    if let Some(a) = s.attach {
        let _ = writeln!(o, "  attached    {}", attach_text(&a));
    }
    if let Some(b) = s.sandbox {
        let _ = writeln!(
            o,
            "  {}",
            style.warn(&format!("sandboxed   {}", b.describe()))
        );
    }
    if let Some(cut) = s.cut_at {
        let _ = writeln!(
            o,
            "  {}",
            style.warn(&format!(
                "partial profile: the file was cut at byte {cut}; data up to its last whole flush"
            ))
        );
    } else if !s.complete {
        let _ = writeln!(
            o,
            "  {}",
            style.warn(
                "partial profile: the process did not exit cleanly; data up to its last flush"
            )
        );
    }
    if let Some(note) = s.python.as_ref().and_then(|p| p.note.as_deref()) {
        let _ = writeln!(o, "  {}", style.warn(note));
    }
    if s.no_unwinder {
        let _ = writeln!(
            o,
            "  {}",
            style.warn(
                "NO STACKS: the interposer could not load libgcc_s.so.1 (its unwinder): not by name, not beside the program's C library, not in the system's library directories; no site, lock or state is named by its code. Install libgcc-s1 (or your glibc's libgcc_s.so.1 beside its libc.so.6), or run --unwinder libunwind"
            )
        );
    }
    if s.heap_unchecked {
        let _ = writeln!(
            o,
            "  {}",
            style.warn(
                "glibc's heap did not read as expected at start (its chunk size words): allocator calls were counted and timed as another allocator's, and cross-thread frees were not measured"
            )
        );
    } else if s.arenas_unread {
        let _ = writeln!(
            o,
            "  note: heaps of huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb): cross-thread frees were not measured"
        );
    }
    let _ = writeln!(
        o,
        "  wall time   {}   threads {}   CPUs {}",
        fmt_ns(s.wall_ns),
        fmt_count(s.thread_count()),
        s.ncpus
    );
    if s.alloc_on_cpu {
        // The allocator-time finding's figure; the calls' timed length beside it where it says
        // something else.
        let timed = if timed_length_differs(s) {
            format!(
                "; {} as timed, waits and the clock's reads included",
                fmt_ns(s.alloc_ns())
            )
        } else {
            String::new()
        };
        // The CPU samples saw the allocator run, but no call went through the hooks: they could
        // not be counted, rather than there were none.
        let calls = if s.alloc_calls() == 0 {
            let why = if s.attach.as_ref().is_some_and(|a| a.how == "injected") {
                "its calls went by pointers it stored before the ptrace attach loaded the hooks"
            } else {
                "an allocator the hooks do not interpose, linked into the program"
            };
            format!("calls not counted ({why})")
        } else {
            format!(
                "{} calls, {} requested",
                fmt_count(s.alloc_calls()),
                fmt_bytes(s.requested_bytes())
            )
        };
        let _ = writeln!(
            o,
            "  allocator   {calls}, {} on a CPU ({} of the threads' CPU time, from {} CPU samples){}",
            fmt_ns(s.allocator_ns()),
            fmt_pct(s.alloc_share_of_cpu()),
            fmt_count(s.alloc_cpu_samples()),
            timed
        );
    } else {
        let aside = s.alloc_sampled_aside().map_or(String::new(), |(share, samples)| {
            format!(
                "; {} of the threads' CPU time by only {} CPU samples, the figure the findings take",
                fmt_pct(share),
                fmt_count(samples)
            )
        });
        let _ = writeln!(
            o,
            "  allocator   {} calls, {} requested, {} inside ({} of thread time{aside})",
            fmt_count(s.alloc_calls()),
            fmt_bytes(s.requested_bytes()),
            fmt_ns(s.alloc_ns()),
            fmt_pct(s.alloc_share_of_life())
        );
    }
    let _ = writeln!(
        o,
        "  locks       {} waiting ({} of thread time); {} lock objects timed{}",
        fmt_ns(s.lock_wait_ns()),
        fmt_pct(s.lock_wait_share_of_life()),
        fmt_count(
            s.locks
                .iter()
                .filter(|l| !matches!(l.kind, "omp-region" | "omp-region-site"))
                .count() as u64
        ),
        match s.unhooked_locks.len() {
            0 => String::new(),
            n => format!(", {n} seen only by sampling"),
        }
    );
    let timing = if s.timing_exact {
        "every call timed".to_string()
    } else {
        let longer = if s.longer_timing_period > s.timing_period {
            format!(
                ", 1-in-{} for a function once a thread has timed enough of its calls",
                fmt_count(u64::from(s.longer_timing_period))
            )
        } else {
            String::new()
        };
        format!(
            "durations estimated from a random 1-in-{} sample of calls{longer} (lock holds 1-in-{}); counts exact",
            s.timing_period, s.lock_timing_period
        )
    };
    let _ = writeln!(
        o,
        "  {}",
        style.dim(&format!(
            "{} · glibc {} · {}",
            s.allocator, s.libc_version, timing
        ))
    );
}

/// The thread table's label column is as wide as its longest label, at least as wide as the
/// table's other columns' headings need and at most `THREAD_LABEL_MAX`: only a longer label is
/// cut (in its name's middle).
const THREAD_LABEL_MIN: usize = 23;
const THREAD_LABEL_MAX: usize = 40;

fn thread_label_width(labels: &[String]) -> usize {
    labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(THREAD_LABEL_MIN, THREAD_LABEL_MAX)
}

fn threads(o: &mut String, s: &Summary, style: Style) {
    heading(
        o,
        style,
        if s.alloc_on_cpu {
            "Threads (shares of each thread's life; the allocator's time on a CPU)"
        } else {
            "Threads (shares of each thread's life)"
        },
    );
    const MAX_ROWS: usize = 20;
    let mut rows: Vec<_> = s.threads.iter().collect();
    rows.sort_by(|a, b| {
        b.main.cmp(&a.main).then(
            (s.allocator_ns_of(b).saturating_add(b.lock_wait_ns))
                .cmp(&s.allocator_ns_of(a).saturating_add(a.lock_wait_ns)),
        )
    });
    let shown = &rows[..rows.len().min(MAX_ROWS)];
    let labels: Vec<String> = shown
        .iter()
        .map(|t| {
            format!(
                "{}{}",
                ThreadId::of_summary(t).short_label(THREAD_LABEL_MAX - 1),
                if t.signal_blocked { "‡" } else { "" }
            )
        })
        .collect();
    let label_width = thread_label_width(&labels);
    let _ = writeln!(
        o,
        "  {:<label_width$} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6}",
        "thread", "life", "CPU", "allocator", "", "lock wait", ""
    );
    for (t, label) in shown.iter().zip(&labels) {
        let _ = writeln!(
            o,
            "  {:<label_width$} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6}",
            label,
            fmt_ns(t.wall_ns),
            fmt_pct(ratio(t.cpu_ns, t.wall_ns)),
            fmt_ns(s.allocator_ns_of(t)),
            fmt_pct(ratio(s.allocator_ns_of(t), t.wall_ns)),
            fmt_ns(t.lock_wait_ns),
            fmt_pct(ratio(t.lock_wait_ns, t.wall_ns)),
        );
    }
    if rows.iter().any(|t| t.signal_blocked) {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(
                "‡ blocks the sampling signal: its states come from the kernel's CPU clock (see Thread states)"
            )
        );
    }
    for t in rows.iter().filter(|t| t.folded.is_some()) {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "{}: short threads folded into one row, their CPU, calls and locks summed",
                ThreadId::of_summary(t).label()
            ))
        );
    }
    if rows.len() > MAX_ROWS {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "... and {} more threads (see --json)",
                rows.len() - MAX_ROWS
            ))
        );
    }
}

/// The calls' timed length says something else than the allocator's time the views show (waits
/// inside the calls, or calls so short that the clock's reads are most of their timed length):
/// the header and the functions table then give it beside.
fn timed_length_differs(s: &Summary) -> bool {
    s.alloc_ns() as f64 > 1.25 * s.allocator_ns() as f64
}

fn functions(o: &mut String, s: &Summary, style: Style) {
    heading(o, style, "Allocator functions");
    let _ = writeln!(
        o,
        "  {:<15} {:>13} {:>11} {:>11} {:>9} {:>9}",
        "function", "calls", "bytes", "time", "mean", "p99"
    );
    for f in s.functions.iter().filter(|f| f.calls > 0) {
        let p99 = f.quantile_ns(0.99).map_or("-".to_string(), fmt_ns);
        let p99 = s
            .groups
            .iter()
            .find(|g| g.name == f.name)
            .and_then(|g| g.quantile_ns(0.99))
            .map_or(p99, fmt_ns);
        let _ = writeln!(
            o,
            "  {:<15} {:>13} {:>11} {:>11} {:>9} {:>9}",
            f.name,
            fmt_count(f.calls),
            if f.name == "free" {
                "-".to_string()
            } else {
                fmt_bytes(f.bytes)
            },
            fmt_ns(f.time_ns),
            fmt_ns(f.mean_ns()),
            p99,
        );
    }
    if s.alloc_on_cpu && timed_length_differs(s) {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "times as timed, start to end: {} in all, where the CPU samples put {} on a CPU (a call of a few nanoseconds is timed mostly by the clock's two reads)",
                fmt_ns(s.alloc_ns()),
                fmt_ns(s.allocator_ns())
            ))
        );
    }
}

fn sizes(o: &mut String, s: &Summary, style: Style) {
    let total = s.requests();
    if total == 0 {
        return;
    }
    heading(o, style, "Request sizes");
    let shares: Vec<String> = [16u64, 32, 64, 256]
        .iter()
        .map(|&limit| {
            format!(
                "{} are {limit} bytes or less",
                fmt_pct(s.size_share_at_most(limit))
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "  of {} requests, {}",
        fmt_count(total),
        shares.join(", ")
    );
    let mut rows: Vec<(String, u64)> = Vec::new();
    for (lo, hi) in SIZE_ROWS {
        rows.push((format!("{lo}-{hi}"), s.requests_between(lo, hi)));
    }
    let mut lo = 257u64;
    while lo <= 1 << 40 {
        let hi = (lo - 1) * 2;
        rows.push((
            format!("{}-{}", fmt_bytes(lo), fmt_bytes(hi)),
            s.requests_between(lo, hi),
        ));
        lo = hi + 1;
    }
    let bigger = total.saturating_sub(sum(rows.iter().map(|r| r.1)));
    if bigger > 0 {
        rows.push(("larger".to_string(), bigger));
    }
    let max = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1);
    let mut cumulative = 0u64;
    let _ = writeln!(
        o,
        "  {:>19} {:>13} {:>7}  {:<30}",
        "bytes", "calls", "cumul.", ""
    );
    for (label, count) in rows {
        cumulative = cumulative.saturating_add(count);
        if count == 0 {
            continue;
        }
        let _ = writeln!(
            o,
            "  {:>19} {:>13} {:>7}  {}",
            label,
            fmt_count(count),
            fmt_pct(ratio(cumulative, total)),
            bar(count as f64 / max as f64, 30)
        );
    }
}

/// OpenMP parallel regions: their runs, team, time and the team's wait at the closing barrier.
fn omp_regions(o: &mut String, s: &Summary, style: Style) {
    if s.omp_regions.is_empty() {
        return;
    }
    heading(
        o,
        style,
        "OpenMP parallel regions (by the team's wait at the closing barrier)",
    );
    let _ = writeln!(
        o,
        "  {:>8} {:>6} {:>11} {:>11} {:>8} {:>11}",
        "runs", "team", "wall", "barrier", "share", "fork-join"
    );
    for r in s.omp_regions.iter().take(10) {
        let _ = writeln!(o, "  {}", r.words());
        let _ = writeln!(
            o,
            "  {:>8} {:>6.1} {:>11} {:>11} {:>8} {:>11}",
            fmt_count(r.runs),
            r.team(),
            fmt_ns(r.wall_ns),
            fmt_ns(r.barrier_ns),
            fmt_pct(r.barrier_share()),
            fmt_ns(r.fork_join_ns),
        );
    }
}

fn locks(o: &mut String, s: &Summary, style: Style, stacks: bool) {
    heading(o, style, "Locks by wait time");
    if s.locks.is_empty() && s.unhooked_locks.is_empty() {
        let _ = writeln!(o, "  no lock was taken");
        return;
    }
    if s.locks.is_empty() {
        unhooked_locks(o, s, style, stacks);
        return;
    }
    let _ = writeln!(
        o,
        "  {:<14} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>3}",
        "address", "kind", "acquired", "contended", "wait", "max wait", "held", "thr"
    );
    for l in s.locks.iter().take(10) {
        let _ = writeln!(
            o,
            "  {:<14} {:<11} {:>9} {:>9} {:>9} {:>8} {:>8} {:>3}",
            format!("{:#x}", l.address),
            l.kind_text(),
            fmt_count(l.acquisitions),
            fmt_count(l.contended),
            fmt_ns(l.wait_ns),
            fmt_ns(l.max_wait_ns),
            l.hold_known().map_or("-".into(), |h| fmt_ns(h as f64)),
            l.threads
        );
        // A waiter site's figures are its own waits; a holder site's are the waits of others
        // attributed to it, by its share of the sampled releases that found waiters.
        for (what, figures, sites) in [
            ("waited in", "contended, ~{w} waiting", &l.sites),
            (
                "held by",
                "waits caused, ~{w} of others' waiting",
                &l.holder_sites,
            ),
        ] {
            for site in sites.iter().take(3) {
                let label = site
                    .user_frame()
                    .map_or_else(|| "?".into(), |f| f.display());
                let figures = figures.replace("{w}", &fmt_ns(site.wait_ns));
                let _ = writeln!(
                    o,
                    "      {} {label}  {}",
                    style.dim(what),
                    style.dim(&format!(
                        "(~{} {figures}, {} samples)",
                        fmt_count(site.contended),
                        site.samples
                    ))
                );
                if stacks {
                    for (i, f) in site.frames.iter().enumerate() {
                        let mark = if i == site.user { ">" } else { " " };
                        let _ = writeln!(o, "        {mark} {}", f.display());
                    }
                }
            }
        }
    }
    if s.locks.len() > 10 {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "... and {} more locks (see --json)",
                s.locks.len() - 10
            ))
        );
    }
    unhooked_locks(o, s, style, stacks);
}

/// The lock waits no hook timed, estimated from the thread states' samples.
fn unhooked_locks(o: &mut String, s: &Summary, style: Style, stacks: bool) {
    if s.unhooked_locks.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "  {}",
        style.dim(
            "seen only by sampling (locks inside libraries, or waits begun before the hooks):"
        )
    );
    for l in s.unhooked_locks.iter().take(10) {
        let site = l.user_frame().map_or_else(|| "?".into(), |f| f.display());
        let _ = writeln!(
            o,
            "  ~{:>9} {:>3} thr  {}  {}",
            fmt_ns(l.wait_ns),
            l.threads,
            l.name,
            style.dim(&format!("waited in {site} ({} samples)", l.samples))
        );
        if stacks {
            for (i, f) in l.frames.iter().enumerate() {
                let mark = if i == l.user { ">" } else { " " };
                let _ = writeln!(o, "        {mark} {}", f.display());
            }
        }
    }
    if s.unhooked_locks.len() > 10 {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "... and {} more (see --json)",
                s.unhooked_locks.len() - 10
            ))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_label_width_fits_the_longest_label_up_to_the_maximum() {
        let labels = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(thread_label_width(&labels(&["w [1]"])), THREAD_LABEL_MIN);
        // `MainThread [123456] (main)` is 26 characters: the column widens, nothing is cut.
        let main = "MainThread [123456] (main)";
        assert_eq!(thread_label_width(&labels(&[main, "w [1]"])), 26);
        let long = "x".repeat(60);
        assert_eq!(thread_label_width(&labels(&[&long])), THREAD_LABEL_MAX);
    }
}
