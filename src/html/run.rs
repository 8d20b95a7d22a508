//! The section of a run of several processes on the page of its launched process (or of its
//! busiest one): the process tree and the findings by program, from the run's model
//! (`crate::model::run`).

use crate::model::run::Run;
use crate::util::{escape, fmt_count, fmt_ns};
use std::fmt::Write;

/// An HTML section with the tree and the programs, for the page of the launched process.
pub fn section(run: &Run) -> String {
    let mut o = String::from("<h2 id=\"run\">Processes of this run</h2>");
    let _ = write!(
        o,
        "<p>{} processes of {} programs · wall {} · CPU {}</p><table><thead><tr><th>pid</th><th>command</th><th>wall</th><th>CPU</th><th>allocator calls</th><th>ended</th></tr></thead><tbody>",
        run.processes.len(),
        run.programs().len(),
        fmt_ns(run.wall_ns() as f64),
        fmt_ns(run.total_cpu_ns() as f64)
    );
    for (p, depth) in run.tree.walk() {
        let f = &run.processes[p];
        // A process that set a title is named by it (its role), then by how it started.
        let title = if f.title.is_empty() {
            String::new()
        } else {
            format!("<b>{}</b> · started as ", escape(&f.title.join(" ")))
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td style=\"padding-left:{}em\">{title}<code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            run.tree.processes[p].pid,
            depth,
            escape(&shell_words::join(&f.command)),
            fmt_ns(f.wall_ns as f64),
            fmt_ns(f.cpu_ns as f64),
            fmt_count(f.alloc_calls),
            escape(&Run::ending(f))
        );
    }
    o.push_str("</tbody></table>");
    for f in &run.findings {
        let _ = write!(
            o,
            "<p><b>{}</b> {} <span class=\"muted\">[{}]</span></p>",
            f.severity.label(),
            escape(&f.title),
            escape(&f.id)
        );
    }
    let mut findings = String::new();
    for (name, members) in run.programs() {
        for (id, title, count) in run.program_findings(&members) {
            let _ = write!(
                findings,
                "<li><b>{}</b> ({count} of {} processes): {} <span class=\"muted\">[{}]</span></li>",
                escape(&name),
                members.len(),
                escape(&title),
                escape(&id)
            );
        }
    }
    if !findings.is_empty() {
        let _ = write!(o, "<h3>Findings by program</h3><ul>{findings}</ul>");
    }
    o
}
