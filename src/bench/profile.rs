//! `--profile`: one extra run of a variant under `stallscope run`, summarised as the
//! share of time spent in the allocator and waiting for locks.

use super::plan::Variant;
use super::results::ProfileShares;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::process::{Command, Stdio};

/// Runs `stallscope run -o FILE -- CMD` then `stallscope report --json FILE`.
pub fn profile_variant(variant: &Variant, index: usize) -> Result<ProfileShares> {
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
        let report = Command::new(&exe)
            .args(["report", "--json"])
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .context("cannot start `stallscope report`")?;
        if !report.status.success() {
            bail!(
                "`stallscope report --json` failed: {}",
                last_line(&report.stderr)
            );
        }
        let json: Value = serde_json::from_slice(&report.stdout)
            .context("`stallscope report --json` did not print JSON")?;
        shares_from_report(&json)
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

/// Allocator share = sum of `alloc_ns` / sum of `cpu_ns` over threads (allocator time
/// is CPU time). Lock share = sum of `lock_wait_ns` / (sum of `cpu_ns` + sum of
/// `lock_wait_ns`): the part of the threads' busy-or-blocked time spent waiting.
pub fn shares_from_report(json: &Value) -> Result<ProfileShares> {
    // Accept the profile at the top level, under "profile", or first in a list.
    let profile = if json.get("threads").is_some() {
        json
    } else if let Some(p) = json.get("profile").filter(|p| p.get("threads").is_some()) {
        p
    } else if let Some(p) = json.as_array().and_then(|a| a.first()) {
        p
    } else {
        bail!("report JSON has no `threads`");
    };
    let threads = profile["threads"]
        .as_array()
        .context("report JSON `threads` is not a list")?;
    let sum = |key: &str| -> f64 { threads.iter().filter_map(|t| t[key].as_f64()).sum() };
    let cpu = sum("cpu_ns");
    let alloc = sum("alloc_ns");
    let lock_wait = sum("lock_wait_ns");
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    Ok(ProfileShares {
        wall_ns: profile["wall_ns"].as_f64().unwrap_or(0.0) as u64,
        alloc_share: share(alloc, cpu),
        lock_share: share(lock_wait, cpu + lock_wait),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_sum_over_threads() {
        let json = serde_json::json!({
            "wall_ns": 1000,
            "threads": [
                {"cpu_ns": 600, "alloc_ns": 150, "lock_wait_ns": 200},
                {"cpu_ns": 400, "alloc_ns": 50, "lock_wait_ns": 0}
            ]
        });
        let shares = shares_from_report(&json).unwrap();
        assert_eq!(shares.wall_ns, 1000);
        assert!((shares.alloc_share - 0.2).abs() < 1e-12);
        assert!((shares.lock_share - 200.0 / 1200.0).abs() < 1e-12);
        let nested = serde_json::json!({"profile": json});
        assert_eq!(shares_from_report(&nested).unwrap(), shares);
        assert!(shares_from_report(&serde_json::json!({"x": 1})).is_err());
    }
}
