//! Phases and heap snapshots as terminal text: the phase table, the slow-phase flags and the heap
//! over time.

use crate::analysis::phases::{PhaseFn, PhaseReport};
use crate::analysis::summary::sum;
use crate::profile::phases::HeapSnapshot;
use crate::util::{Style, fmt_bytes, fmt_count, fmt_ns};
use std::fmt::Write;

pub fn render(r: &PhaseReport, style: Style) -> String {
    let mut o = String::new();
    if !r.phases.is_empty() {
        let _ = writeln!(o, "\n{}", style.bold("Phases"));
        let _ = writeln!(
            o,
            "  {:<28} {:>8} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11}",
            "phase",
            "tid",
            "wall",
            "alloc calls",
            "in alloc",
            "malloc",
            "free",
            "malloc p99",
            "heap free",
            "→ after"
        );
        for ph in &r.phases {
            let calls = sum(ph.fns.iter().map(|f| f.calls));
            let time = sum(ph.fns.iter().map(|f| f.time_ns));
            let mean = |name: &str| {
                ph.function(name)
                    .and_then(PhaseFn::mean_ns)
                    .map_or("-".to_string(), fmt_ns)
            };
            let p99 = ph
                .function("malloc")
                .and_then(|f| f.p99_ns)
                .map_or("-".to_string(), fmt_ns);
            let free = |h: &Option<HeapSnapshot>| {
                h.as_ref()
                    .filter(|h| h.glibc)
                    .map_or("-".to_string(), |h| fmt_bytes(h.free_bytes))
            };
            let name = format!("{}{}", "  ".repeat(ph.depth as usize), ph.label);
            let _ = writeln!(
                o,
                "  {:<28} {:>8} {:>10} {:>11} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11}",
                name,
                ph.tid,
                fmt_ns(ph.wall_ns()),
                fmt_count(calls),
                fmt_ns(time),
                mean("malloc"),
                mean("free"),
                p99,
                free(&ph.heap_before),
                free(&ph.heap_after)
            );
        }
        let _ = writeln!(o, "  {}", style.dim("malloc, free: mean time per call; heap free: free bytes held by the allocator at the phase's begin and end"));
    }
    for f in &r.flags {
        let _ = writeln!(o, "  {} {}", style.warn("!"), f.message);
    }
    if !r.snapshots.is_empty() {
        let _ = writeln!(o, "\n{}", style.bold("Heap snapshots"));
        let _ = writeln!(
            o,
            "  {:<12} {:>9} {:>9} {:>9} {:>6} {:>8} {:>5} {:>9}",
            "label", "at", "in use", "free", "chunks", "fastbins", "frag", "RSS"
        );
        for h in &r.snapshots {
            let at = fmt_ns(h.mono_ns.saturating_sub(r.start_mono_ns));
            if !h.glibc {
                let _ = writeln!(
                    o,
                    "  {:<12} {:>9} {:>9} {:>9} {:>6} {:>8} {:>5} {:>9}",
                    h.label,
                    at,
                    "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    fmt_bytes(h.rss_bytes),
                );
                continue;
            }
            let _ = writeln!(
                o,
                "  {:<12} {:>9} {:>9} {:>9} {:>6} {:>8} {:>4.0}% {:>9}",
                h.label,
                at,
                fmt_bytes(h.in_use_bytes()),
                fmt_bytes(h.free_bytes),
                fmt_count(h.all_free_chunks()),
                fmt_bytes(h.fastbin_bytes),
                h.fragmentation() * 100.0,
                fmt_bytes(h.rss_bytes),
            );
        }
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "chunks: free chunks; frag: free bytes as a share of all the arenas hold; the snapshots took {} in all",
                fmt_ns(r.snapshots.iter().map(|h| h.duration_ns).sum::<u64>())
            ))
        );
        if r.snapshots.iter().any(|h| !h.glibc) {
            let _ = writeln!(
                o,
                "  {}",
                style.dim("heap details are glibc-only: another allocator is in use")
            );
        }
    }
    o
}
