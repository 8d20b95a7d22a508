//! The findings section at the top of the page: what the figures mean, most severe first.

use crate::findings::{Finding, Severity};
use crate::util::escape;
use std::fmt::Write;

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::High => "high",
        Severity::Medium => "medium",
        Severity::Low => "low",
        Severity::Info => "info",
    }
}

/// One article per finding (severity, title, evidence, cause, remedy), or a line saying there
/// are none. The severity is written out, not only coloured.
pub fn section(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "<p class=\"muted\">No findings: no rule matched this profile's figures.</p>"
            .to_string();
    }
    let mut out = String::new();
    for f in findings {
        let level = severity(f.severity);
        let _ = write!(
            out,
            "<article class=\"finding {level}\"><h3><span class=\"severity\">{level}</span>{}</h3><dl><dt>Evidence</dt><dd><ul>",
            escape(&f.title)
        );
        for e in &f.evidence {
            let _ = write!(out, "<li>{}</li>", escape(e));
        }
        let _ = write!(
            out,
            "</ul></dd><dt>Cause</dt><dd>{}</dd><dt>Remedy</dt><dd>{}</dd></dl></article>",
            escape(&f.cause),
            escape(&f.remedy)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_finding_shows_severity_title_evidence_cause_and_remedy() {
        let finding = Finding {
            id: "small-allocations".into(),
            severity: Severity::High,
            title: "Most time goes to malloc of <64 B".into(),
            evidence: vec![
                "52% of thread time in malloc".into(),
                "work at w.c:12".into(),
            ],
            cause: "many small objects".into(),
            remedy: "pool them; `stallscope bench` measures it".into(),
            stake_ns: None,
            uncertain: false,
            about: Vec::new(),
        };
        let html = section(&[finding]);
        assert!(html.contains("<article class=\"finding high\">"));
        assert!(
            html.contains(
                "<span class=\"severity\">high</span>Most time goes to malloc of &lt;64 B"
            )
        );
        assert!(html.contains("<li>52% of thread time in malloc</li><li>work at w.c:12</li>"));
        assert!(html.contains("<dt>Cause</dt><dd>many small objects</dd>"));
        assert!(html.contains("<dt>Remedy</dt><dd>pool them;"));
        assert!(section(&[]).contains("No findings"));
    }
}
