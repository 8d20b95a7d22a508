//! `stallscope bench`: isolated, interleaved benchmark runs with confidence intervals.

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Commands to compare
    pub commands: Vec<String>,
}

pub fn main(_args: BenchArgs) -> anyhow::Result<i32> {
    anyhow::bail!("bench is not implemented yet")
}
