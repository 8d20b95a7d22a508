//! One profiled run of a case variant: `stallscope run` on it, its analysis (what `report`
//! shows) and the few figures the demo compares between variants.

use crate::analysis::Analysis;
use crate::analysis::states::Category;
use crate::model::Model;
use crate::util::ratio;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Profiled {
    pub variant: String,
    pub profile: PathBuf,
    pub analysis: Model,
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
    pub alloc_share_of_cpu: f64,
    /// pthread lock waits / (CPU + lock waits).
    pub lock_wait_share_of_busy: f64,
    /// Thread states' lock time / the threads' sampled lives (sampled time plus what no sample
    /// stands for), when the profile has thread states.
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
    let analysis = Model::read(&path)?;
    Ok(Profiled {
        variant: variant.to_string(),
        figures: figures(&analysis),
        profile: path,
        analysis,
        checksum,
    })
}

/// 1 - CPU / life, summed over the threads the program started (the main thread only when it is
/// alone).
fn off_cpu_share(a: &Analysis) -> f64 {
    let threads = &a.summary.threads;
    let started: Vec<_> = threads.iter().filter(|t| !t.main).collect();
    let chosen = if started.is_empty() {
        threads.iter().collect()
    } else {
        started
    };
    let cpu: f64 = chosen.iter().map(|t| t.cpu_ns as f64).sum();
    let life: f64 = chosen.iter().map(|t| t.wall_ns as f64).sum();
    ratio((life - cpu).max(0.0), life)
}

pub fn figures(a: &Analysis) -> Figures {
    let s = &a.summary;
    Figures {
        wall_ns: s.wall_ns as f64,
        alloc_calls: s.allocation_calls(),
        alloc_share_of_cpu: s.alloc_share_of_cpu(),
        lock_wait_share_of_busy: s.lock_wait_share_of_busy(),
        state_lock_share: a.states.as_ref().map(|r| {
            let all: f64 = r
                .threads
                .iter()
                .map(|t| t.sampled_ns() as f64 + t.unaccounted_ns() as f64)
                .sum();
            ratio(r.category_ns(Category::Lock), all)
        }),
        off_cpu_share: off_cpu_share(a),
        small_share: s.size_share_at_most(32),
        phase_malloc_ratio: a
            .phases
            .flags
            .iter()
            .filter(|f| f.function == "malloc")
            .map(|f| f.ratio)
            .reduce(f64::max),
    }
}

/// Mean `malloc` time per call of each run of a phase named `name`, in order of the runs'
/// labels ("insert #1", "insert #2"), averaged over the threads that ran it.
pub fn phase_malloc_means(a: &Analysis, name: &str) -> Vec<(String, f64)> {
    let mut by_label: Vec<(String, f64, f64)> = Vec::new();
    for p in a.phases.phases.iter().filter(|p| p.name == name) {
        let Some(malloc) = p.function("malloc") else {
            continue;
        };
        let (time, calls) = (malloc.time_ns as f64, malloc.calls as f64);
        match by_label.iter_mut().find(|(l, _, _)| *l == p.label) {
            Some(entry) => {
                entry.1 += time;
                entry.2 += calls;
            }
            None => by_label.push((p.label.clone(), time, calls)),
        }
    }
    by_label.sort_by(|a, b| a.0.cmp(&b.0));
    by_label
        .into_iter()
        .map(|(label, time, calls)| (label, ratio(time, calls)))
        .collect()
}
