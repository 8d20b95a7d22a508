//! The command line: one subcommand per capability, each handled by its own module.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "stallscope",
    version,
    about = "Find out why a multithreaded native program does not scale",
    disable_help_subcommand = true,
    after_help = crate::help::TOPICS
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a program under the profiler and write a profile
    #[command(after_help = crate::help::RUN)]
    Run(crate::run::RunArgs),
    /// Record a window of a running process (started with `run --paused`, or by ptrace without it)
    #[command(after_help = crate::help::ATTACH)]
    Attach(crate::attach::AttachArgs),
    /// Print a profile as a terminal report or as JSON
    #[command(after_help = crate::help::REPORT)]
    Report(crate::report::ReportArgs),
    /// Benchmark commands in isolated, interleaved processes with confidence intervals
    #[command(after_help = crate::help::BENCH)]
    Bench(crate::bench::BenchArgs),
    /// Run a program at several thread counts: where the missing speedup went, remedies measured
    #[command(after_help = crate::help::SCALE)]
    Scale(crate::scale::ScaleArgs),
    /// Write a profile in another tool's format (collapsed stacks, JSON, Chrome trace, pprof)
    #[command(after_help = crate::help::EXPORT)]
    Export(crate::export::ExportArgs),
    /// Compare two profiles of the same program
    #[command(after_help = crate::help::DIFF)]
    Diff(crate::diff::DiffArgs),
    /// Write a profile as one self-contained HTML page
    #[command(after_help = crate::help::HTML)]
    Html(crate::html::HtmlArgs),
    /// Build and profile a bundled multithreaded program
    #[command(after_help = crate::help::DEMO)]
    Demo(crate::demo::DemoArgs),
    /// A command's options and examples, or a topic: findings [ID], states
    Help(crate::help::HelpArgs),
    /// Print the path of the interposer library (extracting it if needed)
    #[command(hide = true)]
    PreloadPath,
}

pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    // A command that prints for a pipeline (`stallscope report FILE | head`) ends quietly when
    // the reader goes away, as any Unix filter: SIGPIPE's default action instead of Rust's
    // ignored SIGPIPE and a panic in `println!`. `run` keeps ignoring it: it must outlive its
    // summary's reader and exit with the program's status.
    if !matches!(cli.command, Command::Run(_) | Command::Attach(_)) {
        crate::util::default_sigpipe();
    }
    match cli.command {
        Command::Run(args) => crate::run::main(args),
        Command::Attach(args) => crate::attach::main(args),
        Command::Report(args) => crate::report::main(args),
        Command::Bench(args) => crate::bench::main(args),
        Command::Scale(args) => crate::scale::main(args),
        Command::Demo(args) => crate::demo::main(args),
        Command::Export(args) => crate::export::main(args),
        Command::Diff(args) => crate::diff::main(args),
        Command::Html(args) => crate::html::main(args),
        Command::Help(args) => crate::help::main(args),
        Command::PreloadPath => {
            let path: PathBuf = crate::preload::library_path()?;
            println!("{}", path.display());
            Ok(0)
        }
    }
}
