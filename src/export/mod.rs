//! `stallscope export`: a profile in another tool's format. One exporter per file, all behind
//! [`Exporter`]; each reads the same model ([`crate::model::Model`]). The stacks' weights and
//! frame names are the model's ([`crate::analysis::collapsed`]), shared with html's flame graph.

mod chrome;
pub mod collapsed;
mod json;
mod pprof;
pub mod push;
mod speedscope;

pub use crate::analysis::collapsed::{Weight, frame_name, lock_leaf, weight_names};
use crate::model::Model;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Folded stacks, `frame;frame;frame value` (flamegraph.pl, inferno, speedscope)
    Collapsed,
    /// The report's JSON (the same as `report --json`)
    Json,
    /// Chrome's Trace Event Format (chrome://tracing, Perfetto, speedscope)
    Chrome,
    /// Gzipped perftools.profiles.Profile protobuf (`go tool pprof`, Pyroscope, Parca)
    Pprof,
    /// speedscope's own file format: one sampled and one evented profile per thread
    Speedscope,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, short = 'f', value_enum, required_unless_present = "push")]
    pub format: Option<Format>,
    /// The value of each stack (collapsed only): calls, bytes, time (in the allocator),
    /// lock-wait; cpu, wall (all sampled time), off-cpu, or one state's time (compute, lock,
    /// blocked, ...: the keys of the report's thread states)
    #[arg(long, value_parser = Weight::parse, default_value = "time")]
    pub weight: Weight,
    /// Output file (default: standard output)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub push: push::PushArgs,
    /// Profile file written by `stallscope run`
    pub file: PathBuf,
}

/// Options that some exporters use.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub weight: Weight,
}

pub trait Exporter {
    fn name(&self) -> &'static str;
    fn write(&self, a: &Model, opts: &Options, out: &mut dyn Write) -> Result<()>;
}

pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Collapsed => Box::new(collapsed::Collapsed),
        Format::Json => Box::new(json::Json),
        Format::Chrome => Box::new(chrome::Chrome),
        Format::Pprof => Box::new(pprof::Pprof),
        Format::Speedscope => Box::new(speedscope::Speedscope),
    }
}

pub fn main(args: ExportArgs) -> Result<i32> {
    let target = match push::Target::from_args(&args.push) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("stallscope: {e}");
            return Ok(2);
        }
    };
    if target.is_some() && (args.format.is_some() || args.output.is_some()) {
        eprintln!("stallscope: --push sends the profile to the server: give no --format or -o");
        return Ok(2);
    }
    let analysis = Model::read(&args.file)?;
    if let Some(target) = target {
        let window = push::window(&analysis, &target, None);
        let names: Vec<&str> = window.series.iter().map(|s| s.name).collect();
        return Ok(match push::engines::send(&target, &window) {
            Ok(()) => {
                eprintln!(
                    "stallscope: pushed {} to {} ({})",
                    args.file.display(),
                    target.describe(),
                    if names.is_empty() {
                        "no samples".to_string()
                    } else {
                        names.join(", ")
                    }
                );
                0
            }
            Err(e) => {
                eprintln!("stallscope: pushing to {} failed: {e}", target.describe());
                1
            }
        });
    }
    let Some(format) = args.format else {
        eprintln!("stallscope: give --format or --push");
        return Ok(2);
    };
    let exporter = exporter(format);
    let opts = Options {
        weight: args.weight,
    };
    let mut buf = Vec::new();
    exporter
        .write(&analysis, &opts, &mut buf)
        .with_context(|| format!("exporting {} as {}", analysis.path, exporter.name()))?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &buf).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(&buf)?,
    }
    Ok(0)
}
