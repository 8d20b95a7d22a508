//! `--profile`: one extra run of a variant under `stallscope run`, summarised as the
//! share of time spent in the allocator and waiting for locks (from the profile's analysis).

use super::plan::Variant;
use super::results::ProfileShares;
use crate::analysis::Options;
use crate::analysis::summary::Summary;
use crate::model::Model;
use anyhow::{Context, Result, bail};
use std::process::{Command, Stdio};

/// Runs `stallscope run -o FILE -- CMD`, then analyses FILE (without symbols: only the shares
/// are needed).
pub fn profile_variant(variant: &Variant, index: usize) -> Result<ProfileShares> {
    let analysis = profiled_analysis(
        variant,
        index,
        Options {
            read_modules: false,
        },
    )?;
    Ok(shares(&analysis.summary))
}

/// One run of the variant under `stallscope run` (the same launch path users take), analysed
/// into its model (figures and findings); the profile file is removed afterwards.
pub fn profiled_analysis(variant: &Variant, index: usize, options: Options) -> Result<Model> {
    let exe = std::env::current_exe().context("cannot find the stallscope executable")?;
    let path = std::env::temp_dir().join(format!(
        "stallscope-bench-{}-{index}.prof",
        std::process::id()
    ));
    let result = (|| {
        let run = Command::new(&exe)
            .arg("run")
            .arg("-o")
            .arg(&path)
            .arg("--")
            .args(&variant.command.argv)
            .envs(variant.command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .context("cannot start `stallscope run`")?;
        if !run.status.success() {
            bail!("`stallscope run` failed: {}", last_line(&run.stderr));
        }
        Model::read_with(&path, options)
    })();
    let _ = std::fs::remove_file(&path);
    // The profiles of the processes the command started, if any.
    let _ = std::fs::remove_dir_all(crate::profile::tree::children_dir(&path));
    result
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines().last().unwrap_or("no message").to_string()
}

/// Allocator share = the allocator's time on a CPU / CPU time over all threads.
/// Lock share = lock waits / (CPU time + lock waits): the part of the threads' busy-or-blocked
/// time spent waiting.
pub fn shares(s: &Summary) -> ProfileShares {
    ProfileShares {
        wall_ns: s.wall_ns,
        alloc_share_of_cpu: s.alloc_share_of_cpu(),
        lock_wait_share_of_busy: s.lock_wait_share_of_busy(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::summary::ThreadSummary;

    #[test]
    fn shares_sum_over_threads() {
        let thread = |cpu_ns, alloc_ns, lock_wait_ns| ThreadSummary {
            cpu_ns,
            alloc_ns,
            alloc_cpu_ns: alloc_ns,
            lock_wait_ns,
            ..ThreadSummary::default()
        };
        let summary = Summary {
            wall_ns: 1000,
            threads: vec![thread(600, 150, 200), thread(400, 50, 0)],
            ..Summary::default()
        };
        let shares = shares(&summary);
        assert_eq!(shares.wall_ns, 1000);
        assert!((shares.alloc_share_of_cpu - 0.2).abs() < 1e-12);
        assert!((shares.lock_wait_share_of_busy - 200.0 / 1200.0).abs() < 1e-12);
        assert_eq!(super::shares(&Summary::default()).alloc_share_of_cpu, 0.0);
    }
}
