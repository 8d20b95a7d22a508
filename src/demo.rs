//! `stallscope demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {}
pub fn main(_args: DemoArgs) -> anyhow::Result<i32> {
    anyhow::bail!("demo: work in progress")
}
