//! Thread states as terminal text: shares per thread, a timeline, the lock and allocator stacks of
//! each thread, parallel efficiency and the hottest functions.

use crate::analysis::efficiency::WorkingEfficiency;
use crate::analysis::states::{
    CATEGORIES, Category, PerCategory, SITE_CATEGORIES, StateReport, StateSite, ThreadStates,
    sampling_note,
};
use crate::analysis::summary::{OmpRegion, OmpRun, Summary, sum};
use crate::analysis::threads::ThreadId;
use crate::util::{Style, fmt_ns, fmt_pct, ratio};
use std::fmt::Write;

/// The glyph of a slice: its largest category, or blank when the thread was hardly there.
fn slice_glyph(slice: &PerCategory<u64>, slice_ns: u64) -> char {
    let total = sum(slice.iter().copied());
    if total.saturating_mul(10) < slice_ns {
        return ' ';
    }
    let (i, _) = slice
        .iter()
        .enumerate()
        .max_by_key(|&(_, v)| *v)
        .expect("seven categories");
    CATEGORIES[i].glyph()
}

/// The thread's label (`ThreadId::label`), marked `‡` when it blocked the sampling signal.
fn thread_label(t: &ThreadStates) -> String {
    let mark = if t.signal_blocked { "‡" } else { "" };
    format!("{}{mark}", ThreadId::of_states(t).label())
}

/// "41% waiting on a lock inside random() called from worker (sim.cpp:12)"
fn site_sentence(t: &ThreadStates, site: &StateSite) -> String {
    let share = t.site_share(site);
    let what = match site.category {
        Category::Lock => "waiting on a lock",
        Category::Allocator => "in the allocator",
        Category::Atomic => "on contended atomic instructions",
        _ => "",
    };
    let from = site
        .user_frame()
        .map(|f| format!(" called from {}", f.display()))
        .unwrap_or_default();
    match site.lock() {
        Some(lock) if site.category == Category::Lock => format!(
            "{} waiting on {} inside {}(){from}",
            fmt_pct(share),
            lock.name,
            site.function()
        ),
        _ => format!(
            "{} {what} inside {}(){from}",
            fmt_pct(share),
            site.function()
        ),
    }
}

/// The timeline's row of parallel regions: per column the region (a digit: letters are the
/// categories' glyphs) whose runs cover most of it, `+` for any region past the ninth, and the
/// legend lines naming each digit's region.
fn regions_row(
    runs: &[OmpRun],
    regions: &[OmpRegion],
    slice_ns: u64,
    columns: usize,
) -> (String, Vec<String>) {
    let slice_ns = slice_ns.max(1);
    let glyph = |k: usize| if k < 9 { (b'1' + k as u8) as char } else { '+' };
    // Digits in order of first appearance, per region (or body address when unnamed); the tenth
    // key gathers the rest.
    let mut keys: Vec<(String, bool)> = Vec::new();
    let mut covered: Vec<Vec<u64>> = Vec::new(); // per letter, per column: ns covered
    let mut totals: Vec<(u64, u64, f64)> = Vec::new(); // regions, ns, barrier-weighted ns
    for run in runs {
        let key = (run.words(regions), run.tbb);
        let k = match keys.iter().position(|x| *x == key) {
            Some(k) => k,
            None => {
                if keys.len() == 10 {
                    9
                } else {
                    keys.push(key);
                    covered.push(vec![0; columns]);
                    totals.push((0, 0, 0.0));
                    keys.len() - 1
                }
            }
        };
        let ns = run.end_ns.saturating_sub(run.begin_ns);
        totals[k].0 += u64::from(run.regions);
        totals[k].1 += ns;
        totals[k].2 += ns as f64 * run.barrier_share;
        let first = (run.begin_ns / slice_ns) as usize;
        let last = (run.end_ns / slice_ns) as usize;
        for (c, cell) in covered[k]
            .iter_mut()
            .enumerate()
            .take(last.min(columns.saturating_sub(1)) + 1)
            .skip(first)
        {
            let lo = run.begin_ns.max(c as u64 * slice_ns);
            let hi = run.end_ns.min((c as u64 + 1) * slice_ns);
            *cell += hi.saturating_sub(lo);
        }
    }
    let row = (0..columns)
        .map(|c| {
            let best = (0..keys.len()).max_by_key(|&k| covered[k][c]);
            match best {
                Some(k) if covered[k][c] * 4 >= slice_ns => glyph(k),
                _ => ' ',
            }
        })
        .collect();
    let legend = keys
        .iter()
        .enumerate()
        .map(|(k, (words, tbb))| {
            let tbb = *tbb;
            let (count, ns, weighted) = totals[k];
            let words = if k == 9 {
                "other parallel regions".to_string()
            } else {
                words.clone()
            };
            if tbb {
                return format!(
                    "{} = {words} ({} runs of the algorithm)",
                    glyph(k),
                    crate::util::fmt_count(count)
                );
            }
            format!(
                "{} = {words} ({} regions, {} of the team's time at the barrier)",
                glyph(k),
                crate::util::fmt_count(count),
                fmt_pct(ratio(weighted, ns as f64))
            )
        })
        .collect();
    (row, legend)
}

/// On a machine of several CPUs, one thread did the work although the command asked for more
/// (`-j 2`) or the program made more: the parallel efficiency above is of that one thread.
fn one_thread_worked(
    r: &StateReport,
    summary: &Summary,
    efficiency: Option<&WorkingEfficiency>,
) -> Option<String> {
    // Without the efficiency (fewer than two threads worked), the threads that worked: xz -T2
    // on an input of one block ran its one worker beside a main thread blocked 99.4% of its
    // life, and the report did not say that the two threads asked for had made no difference.
    let working = efficiency.map_or_else(
        || crate::analysis::efficiency::working_threads(r),
        |e| e.threads,
    );
    if r.cpus < 2 || working != 1 {
        return None;
    }
    let asked = crate::analysis::asked_threads::asked_threads(&summary.command);
    // Threads that lived through at least half the run (not a helper started for a moment),
    // and of those the idle ones: blocked, neither awake nor waiting for a CPU, nine tenths of
    // their life (a thread kept off the CPUs by other load did not idle).
    let lived: Vec<&ThreadStates> = r
        .threads
        .iter()
        .filter(|t| t.life_ns.saturating_mul(2) >= r.wall_ns)
        .collect();
    let made = lived.len();
    let idle = lived
        .iter()
        .filter(|t| {
            let wanted = t
                .awake_ns()
                .saturating_add(t.ns[Category::Runnable.index()]);
            wanted.saturating_mul(10) < t.life_ns
        })
        .count();
    match asked {
        Some((n, option)) => Some(format!(
            "only 1 thread worked, although the command asked for {n} (`{option}`){}: the work ran on one thread, and more threads cannot speed it up as it runs",
            if made > 1 {
                format!("; the program had {made} threads")
            } else {
                String::new()
            }
        )),
        None if made > 1 && idle + 1 >= made => Some(format!(
            "only 1 of the program's {made} threads worked; the others idled: the work ran on one thread"
        )),
        None => None,
    }
}

pub fn render(
    r: &StateReport,
    summary: &Summary,
    efficiency: Option<&WorkingEfficiency>,
    style: Style,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", style.bold("Thread states (sampled)"));
    if let Some(note) = sampling_note(&r.sampling) {
        let _ = writeln!(out, "  {}", style.warn(&note));
    }
    let threads: Vec<&ThreadStates> = r.threads.iter().filter(|t| t.samples > 0).collect();
    if threads.is_empty() {
        let _ = writeln!(
            out,
            "  no samples (the run was too short, or sampling was off)"
        );
        return out;
    }
    let label_width = threads
        .iter()
        .map(|t| thread_label(t).chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    // Only the categories some thread spent time in, in blocks that fit the width.
    let width = super::fit::width();
    let shown: Vec<Category> = CATEGORIES
        .iter()
        .copied()
        .filter(|&c| threads.iter().any(|t| t.share(c) >= 0.0005))
        .collect();
    let key = |c: Category| c.key().replace("kernel_memory", "kern-mem");
    let column = |c: Category| key(c).chars().count().max(6);
    let mut blocks: Vec<Vec<Category>> = vec![Vec::new()];
    let mut used = 2 + label_width;
    for &c in &shown {
        if used + 1 + column(c) > width && !blocks.last().is_some_and(Vec::is_empty) {
            blocks.push(Vec::new());
            used = 2 + label_width;
        }
        used += 1 + column(c);
        blocks.last_mut().expect("a block").push(c);
    }
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "  {:label_width$}", "thread");
        for &c in block {
            let _ = write!(out, " {:>w$}", key(c), w = column(c));
        }
        out.push('\n');
        for t in &threads {
            let _ = write!(out, "  {:label_width$}", thread_label(t));
            for &c in block {
                let share = t.share(c);
                let cell = if share < 0.0005 {
                    "·".to_string()
                } else {
                    fmt_pct(share)
                };
                let _ = write!(out, " {cell:>w$}", w = column(c));
            }
            out.push('\n');
        }
    }
    if shown.len() < CATEGORIES.len() {
        let _ = writeln!(
            out,
            "  {}",
            style.dim("(categories no thread spent time in are left out)")
        );
    }

    if threads.iter().any(|t| t.signal_blocked) {
        let _ = writeln!(
            out,
            "  {}",
            style.dim(
                "‡ blocks the sampling signal: running time from the kernel's CPU clock, counted as compute (not classified)"
            )
        );
    }
    if threads.iter().any(|t| t.folded.is_some()) {
        let _ = writeln!(
            out,
            "  {}",
            style.dim("(folded): short threads summed per name; shares are of their summed lives")
        );
    }

    // The timeline fits the width: slices merged in groups of `per` when there are more than
    // columns.
    let slices = threads.iter().map(|t| t.slices.len()).max().unwrap_or(0);
    let room = width.saturating_sub(label_width + 6).max(20);
    let per = slices.div_ceil(room).max(1);
    let column_ns = r.slice_ns * per as u64;
    let _ = writeln!(
        out,
        "\n  timeline: {} per column, {}",
        fmt_ns(column_ns),
        CATEGORIES
            .iter()
            .filter(|c| shown.contains(c))
            .map(|c| format!("{} {}", c.glyph(), c.key()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for t in &threads {
        let row: String = t
            .slices
            .chunks(per)
            .map(|group| {
                let mut merged = [0u64; CATEGORIES.len()];
                for s in group {
                    for (m, v) in merged.iter_mut().zip(s) {
                        *m += v;
                    }
                }
                slice_glyph(&merged, column_ns)
            })
            .collect();
        let _ = writeln!(out, "  {:label_width$} |{row}|", thread_label(t));
    }
    if !summary.omp_runs.is_empty() {
        let (row, legend) = regions_row(
            &summary.omp_runs,
            &summary.omp_regions,
            column_ns,
            slices.div_ceil(per),
        );
        let _ = writeln!(out, "  {:label_width$} |{row}|", "(regions)");
        for l in legend {
            let _ = writeln!(out, "  {:label_width$}  {l}", "");
        }
    }

    let mut lines = Vec::new();
    for t in &threads {
        for c in SITE_CATEGORIES {
            for site in t.top_sites(c, 2) {
                if site.ns.saturating_mul(100) >= t.life_ns.max(1) {
                    lines.push(format!("  {}: {}", thread_label(t), site_sentence(t, site)));
                }
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(out, "\n  where threads wait (≥ 1% of a thread's life):");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }

    let _ = writeln!(
        out,
        "\n  parallel efficiency: {} (compute {} over {} wall x {} threads)",
        fmt_pct(r.parallel_efficiency()),
        fmt_ns(r.compute_ns()),
        fmt_ns(r.wall_ns),
        r.width()
    );
    if let Some(line) = one_thread_worked(r, summary, efficiency) {
        let _ = writeln!(out, "  {}", style.warn(&line));
    }
    if let Some(e) = efficiency {
        let _ = writeln!(
            out,
            "  working threads' efficiency: {} (compute {} of {} working threads' {} {})",
            fmt_pct(e.value),
            fmt_ns(e.compute_ns),
            e.threads,
            fmt_ns(e.basis_ns),
            e.basis.words()
        );
    }
    let total = sum(r.hot.iter().map(|h| h.samples));
    if total > 0 {
        let _ = writeln!(out, "  hottest functions (CPU samples):");
        for h in r.hot.iter().take(8) {
            let _ = writeln!(
                out,
                "    {:>6}  {:<13} {}",
                fmt_pct(ratio(h.samples, total)),
                h.category.key(),
                h.function
            );
        }
    }
    out
}
