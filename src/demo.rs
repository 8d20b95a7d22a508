//! `stallscope demo`: builds the bundled demo program with the system C compiler, profiles it
//! with `run`, and prints the report.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::process::Command;

static QUICKSTART_SOURCE: &str = include_str!("../demos/quickstart.c");

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Directory for the demo's program and profile (default: a fresh temporary directory)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn main(args: DemoArgs) -> Result<i32> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("stallscope-demo-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let source = dir.join("quickstart.c");
    let program = dir.join("quickstart");
    std::fs::write(&source, QUICKSTART_SOURCE)?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    eprintln!(
        "building the demo program: {cc} -O2 -pthread {}",
        source.display()
    );
    let status = Command::new(&cc)
        .args(["-O2", "-g", "-pthread"])
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status()
        .with_context(|| format!("running the C compiler `{cc}` (install gcc, or set CC)"))?;
    if !status.success() {
        bail!("the demo program did not compile");
    }
    let profile = dir.join(format!("quickstart-{}.prof", std::process::id()));
    let _ = std::fs::remove_file(&profile);
    eprintln!(
        "profiling it: stallscope run -o {} -- {}\n",
        profile.display(),
        program.display()
    );
    let code = crate::run::main(crate::run::RunArgs {
        output: Some(profile.clone()),
        no_children: false,
        timing: crate::run::Timing::Sampled,
        timing_period: 32,
        stack_period: 1024,
        stack_bytes: 512 * 1024,
        no_stacks: false,
        unwinder: crate::run::Unwinder::Libgcc,
        quiet: false,
        snapshot_every: None,
        snapshot_on_signal: false,
        sample_hz: 1000,
        wall_hz: 100,
        no_sampling: false,
        command: vec![program.display().to_string()],
    })?;
    if code != 0 {
        bail!("the demo program exited with status {code}");
    }
    println!();
    crate::report::main(crate::report::ReportArgs {
        json: false,
        stacks: false,
        files: vec![profile],
    })
}
