//! `stallscope export`: a profile in another tool's format. One exporter per file, all behind
//! [`Exporter`]; each reads the same analysis ([`crate::analysis::Analysis`]).

mod chrome;
pub mod collapsed;
mod json;
mod pprof;
mod speedscope;

use crate::analysis::sampled::SampleWeight;
use crate::analysis::states::CATEGORIES;
use crate::model::Model;
use crate::symbols::Frame;
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

/// What the value of a collapsed stack is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Estimated allocator calls of each allocation site
    Calls,
    /// Estimated requested bytes of each allocation site
    Bytes,
    /// Estimated nanoseconds in the allocator of each allocation site
    Time,
    /// Nanoseconds waited for locks, by the waiting threads' stacks
    LockWait,
    /// Sampled thread time (ns): CPU, all time, off-CPU, or one state's
    Sampled(SampleWeight),
}

impl Weight {
    /// Whether the weight is time (ns), comparable with the other time weights.
    pub fn is_time(self) -> bool {
        !matches!(self, Weight::Calls | Weight::Bytes)
    }

    pub fn parse(s: &str) -> Result<Weight, String> {
        match s {
            "calls" => Ok(Weight::Calls),
            "bytes" => Ok(Weight::Bytes),
            "time" => Ok(Weight::Time),
            "lock-wait" => Ok(Weight::LockWait),
            _ => SampleWeight::parse(s).map(Weight::Sampled).ok_or_else(|| {
                format!(
                    "unknown weight {s:?}: expected one of {}",
                    weight_names().join(", ")
                )
            }),
        }
    }
}

/// Every `--weight` value: the allocator and lock weights, then the sampled ones (every state).
pub fn weight_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "calls",
        "bytes",
        "time",
        "lock-wait",
        "cpu",
        "wall",
        "off-cpu",
    ]
    .map(String::from)
    .to_vec();
    names.extend(CATEGORIES.iter().map(|c| c.key().to_string()));
    names
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, short = 'f', value_enum)]
    pub format: Format,
    /// The value of each stack (collapsed only): calls, bytes, time (in the allocator),
    /// lock-wait; cpu, wall (all sampled time), off-cpu, or one state's time (compute, lock,
    /// blocked, ...: the keys of the report's thread states)
    #[arg(long, value_parser = Weight::parse, default_value = "time")]
    pub weight: Weight,
    /// Output file (default: standard output)
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
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

/// A frame's name in exported stacks: its function, else `module+0xoffset`.
pub fn frame_name(f: &Frame) -> String {
    f.name()
}

/// The leaf frame added below a lock wait's stack.
pub fn lock_leaf(kind: &str) -> String {
    format!("{kind} wait")
}

pub fn main(args: ExportArgs) -> Result<i32> {
    let analysis = Model::read(&args.file)?;
    let exporter = exporter(args.format);
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
