//! The CPUs a run's process tree wanted, together, over time: threads on a CPU or runnable,
//! summed over the processes from their kernel figures (`ProcessFigures::cpu_spans`,
//! `delay_spans`). One process's profile sees only its own threads, and CPUs "taken by other
//! processes"; the tree's figures say when those others are the run's own, and when the
//! processes together want more CPUs than the machine has (`findings::run_tree`).

use super::run::{ProcessFigures, bin_ns_of, binned, cpu_within};
use crate::findings::Finding;
use crate::findings::run_tree::{self, TreeDemand};

/// The tree's demand for CPUs over the run (from `start`, `wall` ns long). `margin`: how many
/// CPUs beyond the machine's the processes must want together, and the others beyond the
/// busiest one, for a bin to count as the tree's oversubscription.
pub(super) fn tree_demand(
    processes: &[ProcessFigures],
    cpus: u32,
    start: u64,
    wall: u64,
    margin: f64,
) -> TreeDemand {
    let mut d = TreeDemand {
        cpus,
        wall_ns: wall,
        ..TreeDemand::default()
    };
    if wall == 0 {
        return d;
    }
    // Bins of 50 ms at least: the sampler's looks at each process's threads are not in step,
    // and the tree's sum over finer bins would add one process's look to another's gap.
    let bin_ns = bin_ns_of(wall).max(50_000_000);
    let nbins = wall.div_ceil(bin_ns) as usize;
    // Per bin: threads wanting a CPU summed over the processes, the most of one process, how
    // many processes wanted one, and the threads runnable and on a CPU.
    let (mut sum, mut most, mut count) =
        (vec![0f64; nbins], vec![0f64; nbins], vec![0usize; nbins]);
    let (mut waiting, mut running) = (vec![0f64; nbins], vec![0f64; nbins]);
    for p in processes.iter().filter(|p| p.cpu_ns > 0) {
        let run = binned(std::iter::once(&p.cpu_spans), start, wall, bin_ns);
        let wait = binned(std::iter::once(&p.delay_spans), start, wall, bin_ns);
        for i in 0..nbins {
            let wanting = run[i] + wait[i];
            sum[i] += wanting;
            most[i] = most[i].max(wanting);
            count[i] += usize::from(wanting >= 0.5);
            waiting[i] += wait[i];
            running[i] += run[i];
        }
    }
    let mut wants = Vec::new();
    for i in 0..nbins {
        let across = count[i] >= 2 && sum[i] > cpus as f64 + margin && sum[i] - most[i] >= margin;
        if !across {
            continue;
        }
        let len = (((i + 1) as u64 * bin_ns).min(wall) - i as u64 * bin_ns) as f64;
        d.over_ns += len as u64;
        d.processes = d.processes.max(count[i]);
        d.waiting_ns += (waiting[i] * len) as u64;
        d.running_ns += (running[i] * len) as u64;
        d.excess_ns += ((sum[i] - cpus as f64).max(0.0) * len) as u64;
        wants.push(sum[i]);
    }
    if !wants.is_empty() {
        wants.sort_by(f64::total_cmp);
        d.peak_wanting = wants[(wants.len() - 1) * 9 / 10];
    }
    d
}

/// The findings of the tree as a whole; and each analysed process's `waiting-for-cpu`
/// findings (and those of `main`, the page's model of process `main.0`) told when the CPUs it
/// waited for were taken by the run's own other processes.
pub(super) fn tree_findings(
    processes: &mut [ProcessFigures],
    mut main: Option<(usize, &mut Vec<Finding>)>,
    cpus: u32,
    start: u64,
    wall: u64,
) -> Vec<Finding> {
    let d = tree_demand(processes, cpus, start, wall, run_tree::over_margin());
    let main_process = main.as_ref().map(|m| m.0);
    for p in 0..processes.len() {
        if processes[p].findings.is_none() && Some(p) != main_process {
            continue;
        }
        let (begin, end) = life(&processes[p]);
        if end <= begin {
            continue;
        }
        let (mut siblings, mut busy) = (0, 0.0);
        for (q, other) in processes.iter().enumerate() {
            let within = cpu_within(&other.cpu_spans, begin, end);
            if q != p && within > 0.0 {
                siblings += 1;
                busy += within;
            }
        }
        let busy = busy / (end - begin) as f64;
        if let Some(fs) = processes[p].findings.as_mut() {
            run_tree::name_siblings(fs, siblings, busy);
        }
        if let Some((m, fs)) = main.as_mut()
            && *m == p
        {
            run_tree::name_siblings(fs, siblings, busy);
        }
    }
    run_tree::oversubscription(&d).into_iter().collect()
}

/// A process's first and last moment on a CPU or waiting for one (wall-clock ns).
fn life(p: &ProcessFigures) -> (u64, u64) {
    let spans = p.cpu_spans.iter().chain(&p.delay_spans);
    let begin = spans.clone().map(|s| s.0).min().unwrap_or(0);
    let end = spans.map(|s| s.1).max().unwrap_or(0);
    (begin, end)
}
