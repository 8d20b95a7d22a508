//! `stallscope report`: a profile as a terminal report or as JSON.

pub mod json;
pub mod phases;
pub mod run;
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
    /// Profile files written by `stallscope run`; a run of several processes: its profile or
    /// its directory (`PROFILE.children/`), or a directory of profiles
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

/// One profile read and analysed as `report` shows it: (path, summary with symbolized sites,
/// phases, thread states).
pub fn analyze(
    path: &std::path::Path,
) -> anyhow::Result<(String, summary::Summary, phases::PhaseReport, StatesPart)> {
    let profile = profile::read(path)?;
    let mut s = summary::summarize(&profile);
    sites::fill(&profile, &mut s);
    let phase_report = phases::build(&profile);
    let states = StatesPart::build(&profile);
    Ok((path.display().to_string(), s, phase_report, states))
}

pub fn main(args: ReportArgs) -> anyhow::Result<i32> {
    if let [only] = args.files.as_slice()
        && let Some(run) = run::load(only)?
    {
        return main_run(&run, &args);
    }
    let mut reports = Vec::new();
    for path in &args.files {
        reports.push(analyze(path)?);
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
            print_text(path, s, ph, st, style, args.stacks);
        }
    }
    Ok(0)
}

fn print_text(
    path: &str,
    s: &summary::Summary,
    ph: &phases::PhaseReport,
    st: &StatesPart,
    style: Style,
    stacks: bool,
) {
    // Findings first: what the figures below mean and what to do.
    let found = findings::evaluate(&report_value(s, path, ph, st));
    print!("{}", findings::render_text(&found, style));
    print!("{}", text::render(s, path, style, stacks));
    print!("{}", phases::render_text(ph, style));
    if let Some(r) = &st.report {
        print!("{}", states_render::render_text(r, style));
    }
}

/// A run of several processes: the run's tree, programs and totals, then the launched process's
/// own report. In JSON: the launched process's report with a `run` key (schema
/// stallscope.report/1), or `{"schema": "stallscope.run/1", "run": ...}` without a known root.
fn main_run(run: &run::RunReport, args: &ReportArgs) -> anyhow::Result<i32> {
    let root = run.files.root.as_deref().map(analyze).transpose()?;
    if args.json {
        let mut value = match &root {
            Some((p, s, ph, st)) => report_value(s, p, ph, st),
            None => serde_json::json!({"schema": "stallscope.run/1"}),
        };
        if let Some(object) = value.as_object_mut() {
            object.insert("run".to_string(), run.json());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        let style = Style::for_stdout();
        print!("{}", run.render_text(style));
        if let Some((p, s, ph, st)) = &root {
            println!("\n{}\n", style.bold("── the launched process ──"));
            print_text(p, s, ph, st, style, args.stacks);
        }
    }
    Ok(0)
}
