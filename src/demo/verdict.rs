//! What the demo prints about a case: the figures of its profiles, each variant's speedup over
//! the slow one, and the figure that moved from the slow variants to the fix.

use super::cases::{CaseStudy, Moved};
use super::figures::{self, Profiled};
use super::timing;
use crate::bench::results::Verdict;
use crate::util::{fmt_count, fmt_ns, fmt_pct};

pub fn print_figures(profiled: &[Profiled], name_files: bool) {
    println!("\nProfiles (stallscope run; shares of the threads' time):");
    println!(
        "  {:<12} {:>10} {:>12} {:>10} {:>11} {:>8} {:>8}  checksum",
        "variant", "wall", "alloc calls", "allocator", "lock waits", "off-CPU", "<= 32 B"
    );
    for p in profiled {
        let f = &p.figures;
        println!(
            "  {:<12} {:>10} {:>12} {:>10} {:>11} {:>8} {:>8}  {}",
            p.variant,
            fmt_ns(f.wall_ns),
            fmt_count(f.alloc_calls),
            fmt_pct(f.alloc_share_of_cpu),
            fmt_pct(f.lock_wait_share_of_busy),
            fmt_pct(f.off_cpu_share),
            fmt_pct(f.small_share),
            p.checksum
                .as_deref()
                .map(|c| c.trim_start_matches("checksum "))
                .unwrap_or("-"),
        );
        if name_files {
            println!("  {:<12} profile: {}", "", p.profile.display());
        }
    }
    println!(
        "  allocator: allocator time / CPU time; lock waits: pthread waits / (CPU + waits); \
         off-CPU: 1 - CPU / life of the worker threads (waiting of any kind, the machine's load included)"
    );
}

pub fn checksums_agree(profiled: &[Profiled]) -> bool {
    let first = profiled.first().and_then(|p| p.checksum.as_ref());
    first.is_some() && profiled.iter().all(|p| p.checksum.as_ref() == first)
}

/// "fixed: 3.92x faster than slow (95.0% CI 3.70-4.10x)": `ratio` is variant / baseline time.
pub fn speedup_line(c: &timing::Comparison, baseline: &str) -> String {
    let level = c.ci_level * 100.0;
    let speedup = 1.0 / c.ratio;
    let (low, high) = (1.0 / c.ci_high, 1.0 / c.ci_low);
    match c.verdict {
        Verdict::Faster => format!(
            "{}: {speedup:.2}x faster than {baseline} ({level:.1}% CI {low:.2}-{high:.2}x)",
            c.variant
        ),
        Verdict::Slower => format!(
            "{}: {:.2}x slower than {baseline} ({level:.1}% CI {:.2}-{:.2}x)",
            c.variant, c.ratio, c.ci_low, c.ci_high
        ),
        _ => format!(
            "{}: no measurable difference from {baseline} ({speedup:.2}x, {level:.1}% CI \
             {low:.2}-{high:.2}x)",
            c.variant
        ),
    }
}

fn profile_of<'a>(profiled: &'a [Profiled], variant: &str) -> Option<&'a Profiled> {
    profiled.iter().find(|p| p.variant == variant)
}

/// The figure that moved, from each slow variant to the fix.
pub fn moved_lines(moved: Moved, case: &CaseStudy, profiled: &[Profiled]) -> Vec<String> {
    let Some(fixed) = profile_of(profiled, case.fixed) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for slow in case.slow.iter().filter_map(|v| profile_of(profiled, v)) {
        let (s, f) = (&slow.figures, &fixed.figures);
        let pair = format!("{} → {}", slow.variant, fixed.variant);
        match moved {
            Moved::AllocatorShare => lines.push(format!(
                "allocator time, share of thread CPU time: {} → {} ({pair}); allocation calls {} → {}",
                fmt_pct(s.alloc_share_of_cpu),
                fmt_pct(f.alloc_share_of_cpu),
                fmt_count(s.alloc_calls),
                fmt_count(f.alloc_calls)
            )),
            Moved::LockWait => {
                let states = match (s.state_lock_share, f.state_lock_share) {
                    (Some(a), Some(b)) => {
                        format!("; lock time in the sampled thread states {} → {}", fmt_pct(a), fmt_pct(b))
                    }
                    _ => String::new(),
                };
                lines.push(format!(
                    "pthread lock waits {} → {}; threads off the CPU {} → {} ({pair}){states}",
                    fmt_pct(s.lock_wait_share_of_busy),
                    fmt_pct(f.lock_wait_share_of_busy),
                    fmt_pct(s.off_cpu_share),
                    fmt_pct(f.off_cpu_share)
                ));
            }
            Moved::PhaseMalloc => {
                for p in [slow, fixed] {
                    let means = figures::phase_malloc_means(&p.analysis, "insert");
                    let text: Vec<String> = means
                        .iter()
                        .map(|(label, ns)| format!("{label} {}", fmt_ns(*ns)))
                        .collect();
                    let ratio = match (means.first(), means.last()) {
                        (Some((_, a)), Some((_, b))) if means.len() > 1 && *a > 0.0 => {
                            format!(" ({:.1}x)", b / a)
                        }
                        _ => String::new(),
                    };
                    let flag = match p.figures.phase_malloc_ratio {
                        Some(r) => format!("; the report flags a phase slowdown of up to {r:.1}x"),
                        None => "; no phase slowdown flagged".to_string(),
                    };
                    lines.push(format!(
                        "malloc per call in phase `insert`, {}: {}{ratio}{flag}",
                        p.variant,
                        text.join(", ")
                    ));
                }
            }
        }
    }
    lines
}
