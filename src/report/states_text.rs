//! Thread states as terminal text: shares per thread, a timeline, the lock and allocator stacks of
//! each thread, parallel efficiency and the hottest functions.

use crate::analysis::states::{
    CATEGORIES, Category, PerCategory, SITE_CATEGORIES, StateReport, StateSite, ThreadStates,
    sampling_note,
};
use crate::analysis::summary::sum;
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

fn thread_label(t: &ThreadStates) -> String {
    let name = if t.name.is_empty() { "?" } else { &t.name };
    let mark = if t.signal_blocked { "‡" } else { "" };
    match t.folded {
        Some(n) => format!("{name} ×{n} (folded){mark}"),
        None => format!("{name} [{}]{}{mark}", t.tid, if t.main { "*" } else { "" }),
    }
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

pub fn render(r: &StateReport, style: Style) -> String {
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
    let _ = write!(out, "  {:label_width$}", "thread");
    for c in CATEGORIES {
        let _ = write!(out, " {:>9}", c.key().replace("kernel_memory", "kern-mem"));
    }
    out.push('\n');
    for t in &threads {
        let _ = write!(out, "  {:label_width$}", thread_label(t));
        for c in CATEGORIES {
            let share = t.share(c);
            let cell = if share < 0.0005 {
                "·".to_string()
            } else {
                fmt_pct(share)
            };
            let _ = write!(out, " {cell:>9}");
        }
        out.push('\n');
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

    let _ = writeln!(
        out,
        "\n  timeline: {} per column, {}",
        fmt_ns(r.slice_ns),
        CATEGORIES
            .iter()
            .map(|c| format!("{} {}", c.glyph(), c.key()))
            .collect::<Vec<_>>()
            .join("  ")
    );
    for t in &threads {
        let row: String = t
            .slices
            .iter()
            .map(|s| slice_glyph(s, r.slice_ns))
            .collect();
        let _ = writeln!(out, "  {:label_width$} |{row}|", thread_label(t));
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
