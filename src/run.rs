//! `stallscope run`: launch a program under the interposer.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[arg(trailing_var_arg = true, required = true)]
    pub command: Vec<String>,
}
pub fn main(_args: RunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("run: work in progress")
}
