//! Command-line options of `stallscope scale`.

use std::path::PathBuf;

/// Remedies `--try` measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// jemalloc, tcmalloc and mimalloc preloaded in turn
    Allocators,
    /// glibc malloc with one arena, an arena per thread, and a larger per-thread cache
    Arenas,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ScaleArgs {
    /// Thread counts to measure (default: 1, 2, 4, ... up to the CPUs, and the CPUs themselves).
    /// The program reads its count from `{threads}` in its arguments, STALLSCOPE_THREADS or
    /// OMP_NUM_THREADS
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub threads: Vec<u32>,

    /// Timed runs per thread count (and per remedy), interleaved A B, B A, ...
    #[arg(short = 'r', long, value_name = "N", default_value_t = crate::bench::DEFAULT_RUNS)]
    pub runs: usize,

    /// Untimed warm-up runs per variant before the timed runs
    #[arg(short = 'w', long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,

    /// Also measure remedies at each thread count: allocators, arenas (repeatable, or a list)
    #[arg(long = "try", value_enum, value_delimiter = ',', value_name = "REMEDY")]
    pub remedies: Vec<Remedy>,

    /// Confidence level of the intervals
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,

    /// Ratios within this relative band of 1.0 are "within noise"
    #[arg(long, value_name = "FRACTION", default_value_t = 0.02)]
    pub noise: f64,

    /// Skip the profiled run at each count (no causes, only the curve and the fits)
    #[arg(long)]
    pub no_profile: bool,

    /// Never draw progress on the terminal
    #[arg(long)]
    pub no_progress: bool,

    /// Write the results as JSON (schema: docs/SCALE.md)
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Write the results as one self-contained HTML page
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// The program and its arguments (after `--`)
    #[arg(trailing_var_arg = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}
