//! The terminal report's concurrency section: CPU demand (what the program offered
//! and what it got), serial sections, load imbalance, oversubscription and waiting for a CPU.

use crate::analysis::Analysis;
use crate::analysis::concurrency::{Concurrency, Utilization};
use crate::util::{Style, fmt_ns, fmt_pct};
use std::fmt::Write;

fn classes(u: &Utilization) -> String {
    format!(
        "idle {}, poor {}, ok {}, ideal {} (over {}); mean {:.2} threads",
        fmt_pct(u.idle),
        fmt_pct(u.poor),
        fmt_pct(u.ok),
        fmt_pct(u.ideal),
        fmt_pct(u.over),
        u.mean
    )
}

pub fn render(a: &Analysis, c: &Concurrency, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", style.bold("Concurrency (kernel figures)"));
    let _ = writeln!(
        out,
        "  CPU demand on {} CPUs: {} (threads wanting a CPU; useful work is the parallel efficiency)",
        c.cpus,
        c.demand()
    );
    let _ = writeln!(out, "    threads wanting a CPU: {}", classes(&c.offered));
    let _ = writeln!(out, "    threads on a CPU: {}", classes(&c.achieved));
    let _ = writeln!(
        out,
        "  waiting for a CPU: {} because of the program's own threads, {} because of other load",
        fmt_ns(c.own_runnable_ns),
        fmt_ns(c.other_runnable_ns)
    );
    let states = a.states.as_ref();
    for s in &c.serial {
        let (who, frame) = s.who_and_where(states);
        let _ = writeln!(
            out,
            "  serial section {} to {} ({}): {} in {}",
            fmt_ns(s.begin_ns),
            fmt_ns(s.end_ns),
            fmt_ns(s.end_ns - s.begin_ns),
            who,
            frame
        );
    }
    if let Some(im) = &c.imbalance {
        let _ = writeln!(
            out,
            "  load imbalance: {} sibling threads, the last finished at {}, {} after the even-split end; the others idled {}",
            im.members.len(),
            fmt_ns(im.last_end_ns),
            fmt_ns(im.excess_ns()),
            fmt_ns(im.idle_ns)
        );
    }
    if let Some(b) = &a.blame {
        blame(&mut out, a, b);
    }
    out
}

/// Waiting for work, charged to the work that ran meanwhile: the heaviest places.
fn blame(out: &mut String, a: &Analysis, b: &crate::analysis::blame::Blame) {
    if b.charged_ns == 0 && b.uncharged_ns == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  waiting for work: {} while other threads worked and a CPU was free (charged to that work), {} while nothing worked or no CPU was free",
        fmt_ns(b.charged_ns),
        fmt_ns(b.uncharged_ns)
    );
    for c in b.culprits.iter().take(5) {
        let threads = a
            .states
            .as_ref()
            .map_or_else(Vec::new, |s| c.thread_labels(s));
        let _ = writeln!(
            out,
            "    {} charged to {} (ran {} while others waited, on {}){}",
            fmt_ns(c.charged_ns),
            c.place(),
            fmt_ns(c.alone_ns),
            threads.join(", "),
            c.waits
                .first()
                .map_or_else(String::new, |w| format!("; they waited in {}", w.0))
        );
    }
}
