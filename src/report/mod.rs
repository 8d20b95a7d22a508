//! `stallscope report`: a profile as a terminal report or as JSON.

pub mod json;
pub mod phases;
pub mod sites;
pub mod states;
pub mod states_render;
pub mod summary;
pub mod text;

use crate::findings;
use crate::profile;
use crate::util::Style;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Print JSON (schema stallscope.report/1) instead of the terminal report
    #[arg(long)]
    pub json: bool,
    /// Show the full call chain of each allocation site (not only its user frame)
    #[arg(long)]
    pub stacks: bool,
    /// Profile files written by `stallscope run`
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// The JSON report of one profile (schema stallscope.report/1): the summary, its sites, phases,
/// and the findings drawn from all of them.
pub fn report_value(
    s: &summary::Summary,
    path: &str,
    ph: &phases::PhaseReport,
    st: &StatesPart,
) -> serde_json::Value {
    let mut value = json::report_json(s, path);
    if let Some(object) = value.as_object_mut() {
        for (key, v) in phases::json_keys(ph) {
            object.insert(key.to_string(), v);
        }
    }
    states_render::add_json_keys(&mut value, st.sampling.as_ref(), st.report.as_ref());
    let found = findings::evaluate(&value);
    if let Some(object) = value.as_object_mut() {
        object.insert("findings".to_string(), serde_json::json!(found));
    }
    value
}

/// The thread-state part of a report: how sampling ran, and what it found.
pub struct StatesPart {
    pub sampling: Option<crate::profile::samples::SamplingInfo>,
    pub report: Option<states::StateReport>,
}

impl StatesPart {
    pub fn build(profile: &profile::Profile) -> StatesPart {
        StatesPart {
            sampling: profile.sampling.clone(),
            report: states::build(profile),
        }
    }
}

pub fn main(args: ReportArgs) -> anyhow::Result<i32> {
    let mut reports = Vec::new();
    for path in &args.files {
        let profile = profile::read(path)?;
        let mut s = summary::summarize(&profile);
        sites::fill(&profile, &mut s);
        let phase_report = phases::build(&profile);
        let states = StatesPart::build(&profile);
        reports.push((path.display().to_string(), s, phase_report, states));
    }
    if args.json {
        let values: Vec<_> = reports
            .iter()
            .map(|(p, s, ph, st)| report_value(s, p, ph, st))
            .collect();
        let out = if values.len() == 1 {
            values.into_iter().next().expect("one report")
        } else {
            serde_json::Value::Array(values)
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let style = Style::for_stdout();
        for (i, (path, s, ph, st)) in reports.iter().enumerate() {
            if i > 0 {
                println!();
            }
            // Findings first: what the figures below mean and what to do.
            let found = findings::evaluate(&report_value(s, path, ph, st));
            print!("{}", findings::render_text(&found, style));
            print!("{}", text::render(s, path, style, args.stacks));
            print!("{}", phases::render_text(ph, style));
            if let Some(r) = &st.report {
                print!("{}", states_render::render_text(r, style));
            }
        }
    }
    Ok(0)
}
