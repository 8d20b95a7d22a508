//! `stallscope report`: the model of a profile as a terminal report or as JSON. Both read the
//! same typed model ([`crate::model::Model`]); the JSON is its serialization
//! ([`crate::model::json`]).

pub mod concurrency_text;
pub mod fit;
mod phases_text;
pub mod run;
pub mod states_text;
pub mod text;
pub mod waitfor_text;

use crate::model::run::Run;
use crate::model::{Model, json};
use crate::util::Style;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Print JSON (schema stallscope.report/1) instead of the terminal report
    #[arg(long)]
    pub json: bool,
    /// Show the full call chain of each allocation site (not only its user frame)
    #[arg(long)]
    pub stacks: bool,
    /// A run of several processes: list every process of the tree (without it, the busiest
    /// 60 and the processes above them)
    #[arg(long)]
    pub all_processes: bool,
    /// Profile files written by `stallscope run`; a run of several processes: its profile or
    /// its directory (`PROFILE.children/`), or a directory of profiles
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

/// The terminal report of one analysed profile: findings first (what the figures below mean and
/// what to do), then the overview, threads, allocator, sites and locks, phases, thread states.
pub fn render_text(a: &Model, style: Style, stacks: bool) -> String {
    let mut out = crate::findings::render_text(&a.findings, style);
    out.push_str(&text::render(a, style, stacks));
    out.push_str(&phases_text::render(&a.phases, style));
    if let Some(r) = &a.states {
        out.push_str(&states_text::render(
            r,
            &a.summary,
            a.efficiency.as_ref(),
            style,
        ));
    }
    out.push_str(&waitfor_text::render(a, style));
    if let Some(c) = &a.concurrency {
        out.push_str(&concurrency_text::render(a, c, style));
    }
    match fit::wrap_width() {
        Some(width) => fit::fit(&out, width),
        None => out,
    }
}

pub fn main(args: ReportArgs) -> anyhow::Result<i32> {
    if let [only] = args.files.as_slice()
        && let Some(run) = crate::model::run::load(only)?
    {
        return main_run(&run, &args);
    }
    let analyses = args
        .files
        .iter()
        .map(|path| Model::read(path))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        writeln!(stdout, "{}", json::to_string(&analyses)?)?;
    } else {
        let style = Style::for_stdout();
        for (i, a) in analyses.iter().enumerate() {
            if i > 0 {
                writeln!(stdout)?;
            }
            write!(stdout, "{}", render_text(a, style, args.stacks))?;
        }
    }
    Ok(0)
}

/// `report --json` on a run: the launched process's report (or only the run's schema) with the
/// run's key after it.
#[derive(Serialize)]
struct RunReport<'a> {
    #[serde(flatten)]
    launched: Launched<'a>,
    run: run::RunJson<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Launched<'a> {
    Report(Box<json::Report<'a>>),
    RunOnly { schema: &'static str },
}

/// A run of several processes: the run's tree, programs and totals, then the launched process's
/// own report. In JSON: the launched process's report with a `run` key (schema
/// stallscope.report/1), or `{"schema": "stallscope.run/1", "run": ...}` without a known root.
fn main_run(run: &Run, args: &ReportArgs) -> anyhow::Result<i32> {
    let root = run.launched()?;
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let report = RunReport {
            launched: match root {
                Some(a) => Launched::Report(Box::new(json::report(a))),
                None => Launched::RunOnly {
                    schema: "stallscope.run/1",
                },
            },
            run: run::json(run),
        };
        writeln!(stdout, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        let style = Style::for_stdout();
        write!(
            stdout,
            "{}",
            run::render_text(run, style, args.all_processes)
        )?;
        if let Some(a) = root {
            writeln!(stdout, "\n{}\n", style.bold("── the launched process ──"))?;
            write!(stdout, "{}", render_text(a, style, args.stacks))?;
        }
    }
    Ok(0)
}
