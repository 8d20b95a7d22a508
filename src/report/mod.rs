//! `stallscope report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    pub files: Vec<std::path::PathBuf>,
}
pub fn main(_args: ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("report: work in progress")
}
