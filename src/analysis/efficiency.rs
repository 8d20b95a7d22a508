//! The working threads' efficiency: the share of the time of the threads that work that goes to
//! computation, with every other part. One figure for the report, the JSON, the HTML page and
//! the `parallel-efficiency` finding. It is not the report's "parallel efficiency" (computation
//! over wall x the CPUs the threads could use), which also loses to serial stretches, imbalance
//! and waiting for a CPU; this one leaves those to their own figures and tells what the working
//! threads' time goes to. The thresholds are data: `efficiency.json`.

use super::states::{CATEGORIES, Category, StateReport, ThreadStates};
use super::summary::Summary;
use crate::util::ratio;
use serde::Deserialize;
use std::sync::OnceLock;

#[derive(Debug, Clone, Deserialize)]
pub struct Thresholds {
    /// Fewer working threads than this: not a parallel program's efficiency, none.
    pub min_threads: f64,
    /// A thread blocked or idle for this share of its sampled time waits for the others (a main
    /// thread in join, an idle pool thread): not a working thread.
    pub waiting_thread_blocked_share: f64,
    /// A working thread was on a CPU (or, without thread states, on one or in a lock wait) for
    /// at least this share of its fair share of the CPUs.
    pub active_cpu_share: f64,
}

static THRESHOLDS_TEXT: &str = include_str!("efficiency.json");

pub fn thresholds() -> &'static Thresholds {
    static T: OnceLock<Thresholds> = OnceLock::new();
    T.get_or_init(|| serde_json::from_str(THRESHOLDS_TEXT).expect("efficiency.json is valid"))
}

/// Where the figure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Sampled thread states with the kernel's figures: the threads' time awake and not waiting
    /// (for work, a condition, input or a CPU).
    KernelStates,
    /// Sampled thread states without them: wall x min(threads, CPUs).
    States,
    /// Without states: computation + the allocator + lock waits.
    CpuTime,
}

impl Basis {
    pub fn key(self) -> &'static str {
        match self {
            Basis::KernelStates => "awake_not_waiting",
            Basis::States => "wall_x_threads",
            Basis::CpuTime => "cpu_alloc_lock",
        }
    }

    /// What the time is, after "the threads' time".
    pub fn words(self) -> &'static str {
        match self {
            Basis::KernelStates => "awake and not waiting for work or a CPU",
            Basis::States => "(wall time x threads)",
            Basis::CpuTime => "on a CPU or waiting for a lock",
        }
    }
}

/// The working threads' efficiency and the parts of their time that are not computation.
#[derive(Debug, Clone)]
pub struct WorkingEfficiency {
    /// Computation over `basis_ns`, at most 1 (the summed states' rounding once put a stream
    /// parser's computation a nanosecond above its basis: 1.000000017).
    pub value: f64,
    pub compute_ns: f64,
    /// The time `value` is a share of.
    pub basis_ns: f64,
    pub basis: Basis,
    /// The thread-state samples the figure comes from (0: not from samples): a figure from few
    /// of them may be far from the truth.
    pub samples: u64,
    /// The working threads, and the CPUs.
    pub threads: usize,
    pub cpus: u32,
    pub wall_ns: u64,
    /// The time the parts are shares of: `basis_ns`, or the threads' summed life where the parts
    /// can add up to more (blocked threads beyond the CPUs).
    pub parts_basis_ns: f64,
    /// Each category's time that is not computation, in category order.
    pub parts: Vec<(Category, f64)>,
    /// Off-CPU time the profile cannot attribute (sleep, I/O or waits it does not intercept, or
    /// waiting for a CPU on a busy machine).
    pub unattributed_ns: f64,
    /// Whether `value` counts the unattributed time as lost (the sampled states' definition).
    pub counts_unattributed: bool,
}

impl WorkingEfficiency {
    /// A part's share of `parts_basis_ns`.
    pub fn part_share(&self, ns: f64) -> f64 {
        ratio(ns, self.parts_basis_ns)
    }
}

/// The thread-state categories that are the program's time but not its own computation (every
/// state but computation, waiting for a CPU, and stallscope's own work).
pub fn not_compute() -> impl Iterator<Item = Category> {
    CATEGORIES.into_iter().filter(|c| {
        !matches!(
            c,
            Category::Compute | Category::Runnable | Category::Profiler
        )
    })
}

/// From the sampled thread states when there are enough working threads, else from the threads'
/// CPU time, allocator time and lock waits.
pub fn build(
    summary: &Summary,
    states: Option<&StateReport>,
    kernel_figures: bool,
) -> Option<WorkingEfficiency> {
    let th = thresholds();
    states
        .and_then(|r| from_states(th, r, kernel_figures))
        .or_else(|| from_cpu_time(th, summary))
}

/// Threads that work: a thread blocked nearly all its sampled time (a main thread waiting in
/// join, an idle pool thread) is waiting for the others, not a cause of their inefficiency.
fn awake_threads<'a>(th: &Thresholds, r: &'a StateReport) -> Vec<&'a ThreadStates> {
    r.threads
        .iter()
        .filter(|t| {
            let total = t.sampled_ns() as f64;
            total > 0.0
                && ((t.ns[Category::Blocked.index()] + t.ns[Category::Idle.index()]) as f64)
                    < th.waiting_thread_blocked_share * total
        })
        .collect()
}

/// How many threads worked (not blocked or idle for nearly all their sampled time): the count
/// the working threads' efficiency starts from, also where it has too few threads to be given.
pub fn working_threads(r: &StateReport) -> usize {
    awake_threads(thresholds(), r).len()
}

fn from_states(th: &Thresholds, r: &StateReport, kernel: bool) -> Option<WorkingEfficiency> {
    let (cpus, wall) = (r.cpus as f64, r.wall_ns as f64);
    if (r.peak_threads as f64) < th.min_threads {
        return None;
    }
    let all = awake_threads(th, r);
    let working = all.len() as f64;
    if working < th.min_threads {
        return None;
    }
    if kernel {
        // Threads that worked: on a CPU for a part of their fair share of the CPUs (an idle
        // pool's threads, waiting for requests, are not). Of the share, not of the wall time:
        // 60 threads on 2 CPUs get 3% of it each, and had read as "3 threads".
        let fair = (cpus / working).min(1.0);
        let worked = |t: &&ThreadStates| {
            t.kernel
                .is_some_and(|k| k.exec_ns as f64 >= th.active_cpu_share * fair * wall)
        };
        let all: Vec<&ThreadStates> = all.iter().copied().filter(worked).collect();
        if (all.len() as f64) < th.min_threads {
            return None;
        }
        let in_category = |c: Category| all.iter().map(|t| t.ns[c.index()] as f64).sum::<f64>();
        // With the kernel's figures the threads' time is fully split: the basis is the time
        // they were awake and not waiting (a thread waiting in join, for a condition or for
        // input waits for others, never a cause by itself; waiting for a CPU is the machine's
        // or the oversubscription finding's).
        // stallscope's own work (heap snapshots) is left out of the basis too: not the program's.
        let waiting = in_category(Category::Blocked)
            + in_category(Category::Idle)
            + in_category(Category::Runnable)
            + in_category(Category::Profiler);
        let life: f64 = all.iter().map(|t| t.life_ns as f64).sum();
        let capacity = (life - waiting).max(1.0);
        let parts = not_compute()
            .filter(|&c| c != Category::Blocked && c != Category::Idle)
            .map(|c| (c, in_category(c)))
            .collect();
        return Some(of_threads(
            &all,
            r,
            Basis::KernelStates,
            capacity,
            capacity,
            parts,
            0.0,
        ));
    }
    let in_category = |c: Category| all.iter().map(|t| t.ns[c.index()] as f64).sum::<f64>();
    let capacity = wall * working.min(cpus);
    let sampled: f64 = all.iter().map(|t| t.sampled_ns() as f64).sum();
    let life: f64 = all.iter().map(|t| t.life_ns as f64).sum();
    let parts = not_compute().map(|c| (c, in_category(c))).collect();
    // More threads than CPUs can be blocked for longer than the CPUs' capacity (16 threads on 2
    // CPUs showed "blocking 4.921 s (135.4%)"): the parts are shares of their lives.
    Some(of_threads(
        &all,
        r,
        Basis::States,
        capacity,
        life.max(capacity),
        parts,
        (capacity - sampled).max(0.0),
    ))
}

/// The working threads' computation over `capacity`, with the rest of the figure.
fn of_threads(
    threads: &[&ThreadStates],
    r: &StateReport,
    basis: Basis,
    capacity: f64,
    parts_basis_ns: f64,
    parts: Vec<(Category, f64)>,
    unattributed_ns: f64,
) -> WorkingEfficiency {
    let compute: f64 = threads
        .iter()
        .map(|t| t.ns[Category::Compute.index()] as f64)
        .sum();
    WorkingEfficiency {
        value: ratio(compute, capacity).min(1.0),
        compute_ns: compute,
        basis_ns: capacity,
        basis,
        samples: threads.iter().map(|t| t.samples).sum(),
        threads: threads.len(),
        cpus: r.cpus,
        wall_ns: r.wall_ns,
        parts_basis_ns,
        parts,
        unattributed_ns,
        counts_unattributed: true,
    }
}

/// Without sampled states: computation (CPU time outside the allocator) against computation plus
/// the allocator and lock waits. Other off-CPU time is left out: from CPU and wall times alone,
/// waiting for a CPU on a loaded machine looks exactly like a program that sleeps.
fn from_cpu_time(th: &Thresholds, s: &Summary) -> Option<WorkingEfficiency> {
    let (wall, cpus) = (s.wall_ns as f64, s.ncpus as f64);
    // Threads that worked or waited for a lock to work, for a part of their fair share of the
    // CPUs; a main thread waiting in join is not one.
    let busy = s.threads.iter().filter(|t| t.cpu_ns > 0).count().max(1) as f64;
    let fair = (cpus / busy).min(1.0);
    let active = s
        .threads
        .iter()
        .filter(|t| t.cpu_ns as f64 + t.lock_wait_ns as f64 >= th.active_cpu_share * fair * wall)
        .count();
    if (active as f64) < th.min_threads {
        return None;
    }
    let cpu: f64 = s.threads.iter().map(|t| t.cpu_ns as f64).sum();
    let alloc: f64 = s.threads.iter().map(|t| t.alloc_cpu_ns as f64).sum();
    let lock: f64 = s.threads.iter().map(|t| t.lock_wait_ns as f64).sum();
    let compute = cpu - alloc;
    let basis = compute + alloc + lock;
    Some(WorkingEfficiency {
        value: ratio(compute, basis).min(1.0),
        compute_ns: compute,
        basis_ns: basis,
        basis: Basis::CpuTime,
        samples: 0,
        threads: active,
        cpus: s.ncpus,
        wall_ns: s.wall_ns,
        parts_basis_ns: basis,
        parts: vec![(Category::Allocator, alloc), (Category::Lock, lock)],
        unattributed_ns: (wall * (active as f64).min(cpus) - cpu - lock).max(0.0),
        counts_unattributed: false,
    })
}
