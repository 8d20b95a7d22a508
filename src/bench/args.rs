//! Command-line options of `stallscope bench`.

use std::path::PathBuf;

/// How `--order-effect` talks to the program under test.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Try Google Benchmark first, then the stallscope protocol
    Auto,
    /// Google Benchmark flags (`--benchmark_list_tests`, `--benchmark_filter`, JSON output)
    Gbench,
    /// The stallscope protocol (`--stallscope-list`, `--stallscope-run CASE...`), see docs/BENCH.md
    Stallscope,
}

#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Commands to compare; each is split into words like a shell would (no shell is run).
    /// `{threads}` is replaced by the thread count of `--threads`.
    #[arg(required = true, value_name = "COMMAND")]
    pub commands: Vec<String>,

    /// Timed runs per variant (default 10), interleaved A B, B A, ...
    #[arg(short = 'r', long, value_name = "N", conflicts_with = "time_budget")]
    pub runs: Option<usize>,

    /// Choose the number of runs from a time budget in seconds (fixed after warm-up)
    #[arg(long, value_name = "SECONDS")]
    pub time_budget: Option<f64>,

    /// Untimed warm-up runs per variant before the timed runs
    #[arg(short = 'w', long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,

    /// Names of the commands, in order (default: the command text)
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub names: Vec<String>,

    /// Run each command under each allocator: glibc, jemalloc, mimalloc, tcmalloc or a path to a .so
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub allocators: Vec<String>,

    /// Run each command with each thread count; sets `{threads}` and STALLSCOPE_THREADS
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub threads: Vec<u32>,

    /// Compare each case of a benchmark program run alone against its normal sequence
    #[arg(long)]
    pub order_effect: bool,

    /// Protocol used by `--order-effect`
    #[arg(long, value_enum, default_value_t = Protocol::Auto)]
    pub protocol: Protocol,

    /// After timing, run each variant once under `stallscope run` to show where its time went
    #[arg(long)]
    pub profile: bool,

    /// Ratios within this relative band of 1.0 are "within noise"
    #[arg(long, value_name = "FRACTION", default_value_t = 0.02)]
    pub noise: f64,

    /// Confidence level of the intervals
    #[arg(long, value_name = "LEVEL", default_value_t = 0.95)]
    pub confidence: f64,

    /// Significance level of the order-effect test (Bonferroni-corrected over the cases)
    #[arg(long, value_name = "ALPHA", default_value_t = 0.05)]
    pub alpha: f64,

    /// Keep going when a command exits with a non-zero status
    #[arg(short = 'i', long)]
    pub ignore_failure: bool,

    /// Let the commands write to the terminal (default: their output is discarded)
    #[arg(long)]
    pub show_output: bool,

    /// Never draw the progress bar
    #[arg(long)]
    pub no_progress: bool,

    /// Write the results as JSON
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Write the results as a Markdown table
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,

    /// Write the results as CSV
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
}

pub const DEFAULT_RUNS: usize = 10;
