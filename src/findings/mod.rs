//! Findings: what a profile's figures mean, why, and what to do about it. Each finding is derived
//! from the report's JSON (schema stallscope.report/1), so the engine reads exactly what users see.
//!
//! Interface fixed first so that `report`, `html` and `demo` can be built against it; the rules
//! themselves live with the engine.
#![allow(dead_code)] // until report, html and demo call it

use crate::util::Style;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    High,
    Medium,
    Low,
    Info,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable identifier of the rule that produced it, e.g. `small-allocations`.
    pub id: String,
    pub severity: Severity,
    /// One line.
    pub title: String,
    /// The numbers and the user frame that support it.
    pub evidence: Vec<String>,
    /// The cause in plain words.
    pub cause: String,
    /// What to do, with the `stallscope bench` command that measures it where there is one.
    pub remedy: String,
}

/// The findings for one report (the value of `report::report_value`), most severe first.
pub fn evaluate(_report: &serde_json::Value) -> Vec<Finding> {
    Vec::new()
}

/// The findings as terminal text (empty when there are none).
pub fn render_text(findings: &[Finding], _style: Style) -> String {
    let mut out = String::new();
    for f in findings {
        out.push_str(&format!("[{:?}] {}\n", f.severity, f.title));
    }
    out
}
