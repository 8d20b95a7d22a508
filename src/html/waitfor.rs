//! The page's wait-for section: who waited for whom, on what, and what the other thread did
//! meanwhile; the critical path by thread.

use crate::analysis::Analysis;
use crate::analysis::waitfor::edge_object_words;
use crate::util::escape;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};
use std::fmt::Write;

const EDGES_SHOWN: usize = 30;

pub fn section(a: &Analysis) -> String {
    let mut o = String::new();
    let Some(w) = &a.waitfor else {
        return o;
    };
    let p = &a.profile;
    o.push_str("<h2 id=\"waitfor\">Wait-for edges</h2>");
    let _ = write!(
        o,
        "<p class=\"muted\">Who waited for whom, and on what: a lock's owner when the wait began, the thread that signalled a condition variable or posted a semaphore, the joined thread. {} blocking waits recorded{}.</p>",
        fmt_count(w.waits),
        if w.dropped > 0 {
            format!(", {} lost to a full buffer", fmt_count(w.dropped))
        } else {
            String::new()
        }
    );
    o.push_str("<table><tr><th>waiter</th><th>waited for</th><th>on</th><th>waits</th><th>time</th><th>the other thread meanwhile</th></tr>");
    for e in w.edges.iter().take(EDGES_SHOWN) {
        let on = edge_object_words(a, e);
        let other = e
            .other
            .map_or_else(|| "unknown".to_string(), |i| a.label_at(i));
        let meanwhile = e
            .activities
            .iter()
            .take(3)
            .map(|x| {
                format!(
                    "<code>{}</code> ({}, {})",
                    escape(&x.text()),
                    x.category.key(),
                    fmt_pct(ratio(x.ns, e.other_sampled_ns))
                )
            })
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = write!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            escape(&a.label_at(e.waiter)),
            escape(&other),
            escape(&on),
            fmt_count(e.waits),
            fmt_ns(e.wait_ns),
            if meanwhile.is_empty() {
                "-".into()
            } else {
                meanwhile
            }
        );
    }
    o.push_str("</table>\n");
    if !w.knots.is_empty() {
        o.push_str("<h3>Knots</h3><p class=\"muted\">threads the others wait for, that wait for no thread outside: their own work holds the others up.</p><ul>");
        for k in w.knots.iter().take(4) {
            let _ = write!(o, "<li>{}</li>", escape(&k.words(p)));
        }
        o.push_str("</ul>\n");
    }
    let path = &w.critical_path;
    if path.length_ns > 0 {
        let _ = write!(
            o,
            "<h3>Critical path</h3><p class=\"muted\">{} back from the end of the run through who woke whom: a thread's share is the time the run waited on it.</p><table><tr><th>thread</th><th>on the path</th><th>share</th><th>of which waiting with no known waker</th></tr>",
            fmt_ns(path.length_ns)
        );
        for &(i, own, waiting) in path.by_thread.iter().take(10) {
            let _ = write!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&a.label_at(i)),
                fmt_ns(own + waiting),
                fmt_pct(ratio(own + waiting, path.length_ns)),
                fmt_ns(waiting)
            );
        }
        o.push_str("</table>\n");
    }
    o
}
