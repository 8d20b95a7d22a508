//! The terminal report's wait-for section: who waited for whom, on what, what the other thread
//! was doing meanwhile, and the critical path.

use crate::analysis::Analysis;
use crate::analysis::waitfor::edge_object_words;
use crate::util::{Style, fmt_count, fmt_ns, fmt_pct, ratio};
use std::fmt::Write;

const EDGES_SHOWN: usize = 12;

pub fn render(a: &Analysis, style: Style) -> String {
    let mut o = String::new();
    let Some(w) = &a.waitfor else {
        return o;
    };
    let p = &a.profile;
    let _ = writeln!(
        o,
        "\n{}",
        style.bold("Wait-for edges (who waited for whom, on what)")
    );
    let mut dropped = String::new();
    if w.dropped > 0 {
        dropped = format!(", {} more lost to a full buffer", fmt_count(w.dropped));
    }
    let _ = writeln!(
        o,
        "  {}",
        style.dim(&format!(
            "{} blocking waits recorded{dropped}",
            fmt_count(w.waits)
        ))
    );
    for e in w.edges.iter().take(EDGES_SHOWN) {
        let other = match e.other {
            Some(i) => a.label_at(i),
            None => "an unknown thread".into(),
        };
        let on = edge_object_words(a, e);
        let tail = if e.woken_tail_ns.saturating_mul(100) >= e.wait_ns && e.woken_tail_ns > 0 {
            format!(
                " ({} of it waking up after the wake)",
                fmt_pct(ratio(e.woken_tail_ns, e.wait_ns))
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  {} waited for {other} on {on}: {} waits, {}{tail}",
            a.label_at(e.waiter),
            fmt_count(e.waits),
            fmt_ns(e.wait_ns)
        );
        let total = e.other_sampled_ns;
        for act in e.activities.iter().take(3) {
            let _ = writeln!(
                o,
                "      {} {} {}",
                style.dim("meanwhile:"),
                act.text(),
                style.dim(&format!(
                    "({}, {} of its sampled time in these waits)",
                    act.category.words(),
                    fmt_pct(ratio(act.ns, total))
                ))
            );
        }
    }
    if w.edges.len() > EDGES_SHOWN {
        let _ = writeln!(
            o,
            "  {}",
            style.dim(&format!(
                "... and {} more edges (see --json)",
                w.edges.len() - EDGES_SHOWN
            ))
        );
    }
    if !w.knots.is_empty() {
        let _ = writeln!(
            o,
            "\n{} {}",
            style.bold("Knots:"),
            style.dim("threads the others wait for, that wait for no thread outside (their own work holds the others up)")
        );
        for k in w.knots.iter().take(4) {
            let _ = writeln!(o, "  {}", k.words(p));
        }
    }
    let path = &w.critical_path;
    if path.length_ns > 0 {
        let _ = writeln!(
            o,
            "\n{} {}",
            style.bold("Critical path:"),
            style.dim(&format!(
                "{} back from the end of the run, through who woke whom",
                fmt_ns(path.length_ns)
            ))
        );
        for &(i, own, waiting) in path.by_thread.iter().take(6) {
            let mut line = format!(
                "  {:<32} {:>10} ({})",
                a.label_at(i),
                fmt_ns(own + waiting),
                fmt_pct(ratio(own + waiting, path.length_ns))
            );
            if waiting > 0 {
                line.push_str(&format!(
                    ", of which {} waiting with no known waker",
                    fmt_ns(waiting)
                ));
            }
            let _ = writeln!(o, "{line}");
        }
    }
    o
}
