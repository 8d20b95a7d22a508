//! `stallscope export`: a profile in another tool's format. One exporter per file, all behind
//! [`Exporter`]; each reads the same analysis ([`crate::analysis::Analysis`]).

mod chrome;
pub mod collapsed;
mod json;
mod pprof;

use crate::analysis::Analysis;
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
    /// Gzipped perftools.profiles.Profile protobuf (`go tool pprof`)
    Pprof,
}

/// What the value of a collapsed stack is.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Estimated allocator calls of each allocation site
    Calls,
    /// Estimated requested bytes of each allocation site
    Bytes,
    /// Estimated nanoseconds in the allocator of each allocation site
    Time,
    /// Nanoseconds waited for locks, by the waiting threads' stacks
    LockWait,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Output format
    #[arg(long, short = 'f', value_enum)]
    pub format: Format,
    /// The value of each stack (collapsed only)
    #[arg(long, value_enum, default_value = "time")]
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
    fn write(&self, a: &Analysis, opts: &Options, out: &mut dyn Write) -> Result<()>;
}

pub fn exporter(format: Format) -> Box<dyn Exporter> {
    match format {
        Format::Collapsed => Box::new(collapsed::Collapsed),
        Format::Json => Box::new(json::Json),
        Format::Chrome => Box::new(chrome::Chrome),
        Format::Pprof => Box::new(pprof::Pprof),
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
    let analysis = Analysis::read(&args.file)?;
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
