//! One profiled run of a case variant: `stallscope run` on it, its report JSON (built the way
//! `report --json` builds it) and the few figures the demo compares between variants.

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Profiled {
    pub variant: String,
    pub profile: PathBuf,
    pub report: Value,
    /// The program's `checksum ...` line.
    pub checksum: Option<String>,
    pub figures: Figures,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub wall_ns: f64,
    /// Calls that return memory (malloc, calloc, realloc, aligned).
    pub alloc_calls: u64,
    /// Allocator time / thread CPU time.
    pub alloc_share: f64,
    /// pthread lock waits / (CPU + lock waits).
    pub lock_share: f64,
    /// Thread states' lock time / all sampled time, when the profile has thread states.
    pub state_lock_share: Option<f64>,
    /// 1 - CPU / life, summed over the threads the program started (the main thread only when it
    /// is alone: it mostly waits in `join`): waiting of any kind, glibc-internal locks included.
    pub off_cpu_share: f64,
    /// Requests of at most 32 bytes / all requests.
    pub small_share: f64,
    /// The largest ratio of `malloc`'s mean time per call in a phase against an earlier run of the
    /// same phase (the report's phase flags), if any was flagged.
    pub phase_malloc_ratio: Option<f64>,
}

/// Runs `stallscope run -o DIR/CASE-VARIANT.prof -- EXE VARIANT ARGS` with the current executable.
pub fn profile(exe: &Path, variant: &str, args: &[&str], dir: &Path) -> Result<Profiled> {
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or("case");
    let path = dir.join(format!("{name}-{variant}.prof"));
    let _ = std::fs::remove_file(&path); // `run` never overwrites a profile (nor its run directory)
    let _ = std::fs::remove_dir_all(crate::profile::tree::children_dir(&path));
    let me = std::env::current_exe().context("cannot find the stallscope executable")?;
    let out = Command::new(me)
        .args(["run", "--quiet", "-o"])
        .arg(&path)
        .arg("--")
        .arg(exe)
        .arg(variant)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("starting `stallscope run`")?;
    if !out.status.success() {
        bail!(
            "`stallscope run -- {} {variant}` failed ({}):\n{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let checksum = stdout
        .lines()
        .find(|l| l.starts_with("checksum "))
        .map(str::to_string);
    let report = report_value(&path)?;
    Ok(Profiled {
        variant: variant.to_string(),
        figures: figures(&report),
        profile: path,
        report,
        checksum,
    })
}

/// The report JSON of a profile, as `stallscope report --json` prints it.
pub fn report_value(path: &Path) -> Result<Value> {
    Ok(crate::export::Loaded::read(path)?.report_value())
}

fn sum_threads(report: &Value, key: &str) -> f64 {
    report["threads"]
        .as_array()
        .map(|ts| ts.iter().filter_map(|t| t[key].as_f64()).sum())
        .unwrap_or(0.0)
}

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 { part / whole } else { 0.0 }
}

fn off_cpu_share(report: &Value) -> f64 {
    let threads: Vec<&Value> = report["threads"].as_array().into_iter().flatten().collect();
    let started: Vec<&Value> = threads
        .iter()
        .copied()
        .filter(|t| t["main"] == false)
        .collect();
    let chosen = if started.is_empty() { threads } else { started };
    let sum = |key: &str| -> f64 { chosen.iter().filter_map(|t| t[key].as_f64()).sum() };
    let (cpu, life) = (sum("cpu_ns"), sum("wall_ns"));
    share((life - cpu).max(0.0), life)
}

pub fn figures(report: &Value) -> Figures {
    let cpu = sum_threads(report, "cpu_ns");
    let lock_wait = sum_threads(report, "lock_wait_ns");
    let functions = &report["alloc"]["functions"];
    let alloc_calls = ["malloc", "calloc", "realloc", "aligned"]
        .iter()
        .filter_map(|f| functions[*f]["calls"].as_u64())
        .sum();
    let (mut small, mut all) = (0u64, 0u64);
    for bucket in report["alloc"]["size_histogram"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let count = bucket["count"].as_u64().unwrap_or(0);
        all += count;
        if bucket["max_bytes"].as_u64().is_some_and(|m| m <= 32) {
            small += count;
        }
    }
    Figures {
        wall_ns: report["wall_ns"].as_f64().unwrap_or(0.0),
        alloc_calls,
        alloc_share: share(sum_threads(report, "alloc_ns"), cpu),
        lock_share: share(lock_wait, cpu + lock_wait),
        state_lock_share: state_lock_share(report),
        off_cpu_share: off_cpu_share(report),
        small_share: share(small as f64, all as f64),
        phase_malloc_ratio: report["phase_flags"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["function"] == "malloc")
            .filter_map(|f| f["ratio"].as_f64())
            .reduce(f64::max),
    }
}

/// docs/STATES.md: `threads[].states` with `lock_ns` among the sampled categories.
fn state_lock_share(report: &Value) -> Option<f64> {
    let threads = report["threads"].as_array()?;
    let (mut lock, mut all) = (0.0, 0.0);
    let mut any = false;
    for t in threads {
        let Some(states) = t["states"].as_object() else {
            continue;
        };
        any = true;
        for (key, v) in states {
            if key.ends_with("_ns") {
                let ns = v.as_f64().unwrap_or(0.0);
                all += ns;
                if key == "lock_ns" {
                    lock += ns;
                }
            }
        }
    }
    any.then(|| share(lock, all))
}

/// Mean `malloc` time per call of each run of a phase named `name`, in order of the runs'
/// labels ("insert #1", "insert #2"), averaged over the threads that ran it.
pub fn phase_malloc_means(report: &Value, name: &str) -> Vec<(String, f64)> {
    let mut by_label: Vec<(String, f64, f64)> = Vec::new();
    for p in report["phases"].as_array().into_iter().flatten() {
        if p["name"] != name {
            continue;
        }
        let label = p["label"].as_str().unwrap_or(name).to_string();
        let malloc = &p["alloc"]["functions"]["malloc"];
        let (Some(time), Some(calls)) = (malloc["time_ns"].as_f64(), malloc["calls"].as_f64())
        else {
            continue;
        };
        match by_label.iter_mut().find(|(l, _, _)| *l == label) {
            Some(entry) => {
                entry.1 += time;
                entry.2 += calls;
            }
            None => by_label.push((label, time, calls)),
        }
    }
    by_label.sort_by(|a, b| a.0.cmp(&b.0));
    by_label
        .into_iter()
        .map(|(label, time, calls)| (label, share(time, calls)))
        .collect()
}
