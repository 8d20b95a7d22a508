//! From one profiled run to the costs `scale` charges the lost speedup to.
//!
//! [`costs`] is the one place where the analysis model (thread-state categories, their sites and
//! hot functions) becomes causes of lost speedup: a new state or cause of the analysis plugs in
//! through [`cpu_cause`] (CPU time that grows with the thread count) or [`wait_cause`] (time a
//! thread could have run and did not).

use crate::analysis::Analysis;
use crate::analysis::states::{CATEGORIES, Category, StateReport};
use crate::symbols::{Frame, is_runtime_frame};
use serde::Serialize;
use std::collections::BTreeMap;

const ALL: [Cause; 10] = [
    Cause::SerialSection,
    Cause::LoadImbalance,
    Cause::Lock,
    Cause::Allocator,
    Cause::Atomics,
    Cause::CacheLine,
    Cause::KernelMemory,
    Cause::Oversubscription,
    Cause::Io,
    Cause::Spinning,
];

/// What the lost speedup is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Only one thread had work: before the threads start, after they end.
    SerialSection,
    /// Some threads finished and waited while others still worked.
    LoadImbalance,
    /// Waiting for a lock (a pthread lock or one inside the C library).
    Lock,
    /// Allocator work and allocator (arena) locks, beyond what one thread spends.
    Allocator,
    /// Locked atomic instructions that cost more as threads share their line.
    Atomics,
    /// The same function costing more CPU per unit of work with more threads, with no lock or
    /// atomic in sight: false sharing or a cache line moving between cores.
    CacheLine,
    /// Page faults and mmap/munmap in the kernel (its memory map lock is shared).
    KernelMemory,
    /// More threads than CPUs, or threads ready to run and waiting for a CPU.
    Oversubscription,
    /// Waiting for reads and writes.
    Io,
    /// Busy-waiting: spin loops, spinlock acquisition, sched_yield loops.
    Spinning,
}

impl Cause {
    pub fn key(self) -> &'static str {
        match self {
            Cause::SerialSection => "serial_section",
            Cause::LoadImbalance => "load_imbalance",
            Cause::Lock => "lock",
            Cause::Allocator => "allocator",
            Cause::Atomics => "atomics",
            Cause::CacheLine => "cache_line_contention",
            Cause::KernelMemory => "kernel_memory",
            Cause::Oversubscription => "oversubscription",
            Cause::Io => "io",
            Cause::Spinning => "spinning",
        }
    }

    /// The cause with this key; `None` for `residual` or an unknown key.
    pub fn from_key(key: &str) -> Option<Cause> {
        ALL.iter().copied().find(|c| c.key() == key)
    }

    /// Words for a loss's cause key, `residual` included.
    pub fn words_of(key: &str) -> &'static str {
        Cause::from_key(key).map_or("residual", Cause::words)
    }

    pub fn words(self) -> &'static str {
        match self {
            Cause::SerialSection => "serial section",
            Cause::LoadImbalance => "load imbalance",
            Cause::Lock => "lock waits",
            Cause::Allocator => "allocator and arena locks",
            Cause::Atomics => "atomic operations",
            // CPU time per unit of work grows for both, and nothing in a profile tells them apart
            Cause::CacheLine => "cache-line contention or slower CPUs",
            Cause::KernelMemory => "kernel memory work",
            Cause::Oversubscription => "oversubscription",
            Cause::Io => "I/O waits",
            Cause::Spinning => "spinning",
        }
    }
}

/// The cause CPU time of a category is charged to when it grows with the thread count; `None`
/// for plain computation, which is only charged (to cache-line contention) per function.
pub fn cpu_cause(c: Category) -> Option<Cause> {
    match c {
        Category::Compute => None,
        Category::Allocator => Some(Cause::Allocator),
        Category::Lock => Some(Cause::Lock),
        Category::Atomic => Some(Cause::Atomics),
        Category::KernelMemory => Some(Cause::KernelMemory),
        Category::Io => Some(Cause::Io),
        Category::Spinning => Some(Cause::Spinning),
        // The profiler's own work is not the program's cost.
        // Nor is a runtime's idle worker's (it had no work: the serial section or the imbalance
        // that left it idle is charged by `costs`).
        Category::Blocked | Category::Runnable | Category::Profiler | Category::Idle => None,
    }
}

/// The cause a thread's time in a category is charged to when a CPU slot stayed idle meanwhile;
/// `None` for categories that keep a CPU busy. Blocked threads (joins, condition variables) and
/// threads that do not exist yet are charged to a serial section or to load imbalance by
/// [`costs`] itself.
pub fn wait_cause(c: Category) -> Option<Cause> {
    match c {
        Category::Lock => Some(Cause::Lock),
        Category::Io => Some(Cause::Io),
        // Ready to run with no CPU free: `costs` tells the program's own oversubscription from
        // other processes' load by the slots the program filled.
        Category::Runnable => None,
        Category::Compute
        | Category::Allocator
        | Category::Atomic
        | Category::KernelMemory
        | Category::Spinning
        | Category::Profiler => None,
        Category::Blocked | Category::Idle => None,
    }
}

/// CPU time of one function (at the sampled instruction), as a share of the run's CPU samples.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionCpu {
    pub function: String,
    pub category: Category,
    /// In the program's own code (not a system library): the only functions cache-line
    /// contention is charged to.
    pub user_code: bool,
    /// `function at file:line` of the sampled instruction's frame, or its nearest user frame.
    pub user_frame: String,
    pub share_of_cpu: f64,
}

/// Idle CPU slots of the run charged to one cause and user frame, ns over the profiled run.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleCost {
    pub cause: Cause,
    pub user_frame: String,
    pub ns: f64,
}

/// What one profiled run says about where its CPU slots went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunCosts {
    /// The profiled run's wall time: idle costs are in its units.
    pub wall_ns: u64,
    pub cpus: u32,
    pub functions: Vec<FunctionCpu>,
    pub idle: Vec<IdleCost>,
}

/// The one mapping from an analysed profile to loss causes, for a run meant to keep `threads`
/// threads busy. `None` when the profile has no thread-state samples.
pub fn costs(analysis: &Analysis, threads: u32) -> Option<RunCosts> {
    let states = analysis.states.as_ref()?;
    let cpus = states.cpus.max(1);
    Some(RunCosts {
        wall_ns: states.wall_ns,
        cpus,
        functions: function_cpu(states),
        idle: idle_costs(analysis, states, threads.min(cpus).max(1) as u64),
    })
}

fn function_cpu(states: &StateReport) -> Vec<FunctionCpu> {
    let total: u64 = states.hot.iter().map(|h| h.samples).sum();
    // `hot` keeps the heaviest functions; their shares are of the CPU samples they cover, which
    // is what per-unit-of-work comparisons need (the same functions at each count).
    states
        .hot
        .iter()
        .map(|h| {
            let frame = h.frames.first();
            FunctionCpu {
                function: h.function.clone(),
                category: h.category,
                user_code: frame.is_some_and(|f| h.user == 0 && f.function.is_some()),
                user_frame: frame_text(h.frames.get(h.user).or(frame)),
                share_of_cpu: crate::util::ratio(h.samples, total),
            }
        })
        .collect()
}

/// Causes charged to where the program computed (not to what it waited for).
fn structural(cause: Cause) -> bool {
    matches!(cause, Cause::SerialSection | Cause::LoadImbalance)
}

fn frame_text(frame: Option<&Frame>) -> String {
    frame.map(Frame::short_text).unwrap_or_else(|| "?".into())
}

/// Idle CPU slots, slice by slice: `width` slots (the thread count, at most the CPUs) minus the
/// threads' time on a CPU, charged to what the threads that were not running did meanwhile
/// (waited for a lock or I/O, were ready but got no CPU), the rest to a serial section or to
/// load imbalance.
fn idle_costs(analysis: &Analysis, states: &StateReport, width: u64) -> Vec<IdleCost> {
    let profile = &analysis.profile;
    let start = profile.process.start_mono_ns;
    let slice_ns = states.slice_ns.max(1);
    let slices = states.threads.first().map_or(0, |t| t.slices.len());
    // Each thread's life as [begin, end) from the process's start.
    let lives: Vec<(u64, u64)> = profile
        .threads
        .iter()
        .map(|t| {
            let begin = t.start_mono_ns.saturating_sub(start);
            (begin, profile.thread_end_ns(t).saturating_sub(start))
        })
        .collect();

    // The part of the runnable time due to the program's own threads outnumbering the CPUs (the
    // rest is other processes' load); all of it without the kernel's figures.
    let own_share = analysis.concurrency.as_ref().map_or(1.0, |c| {
        let all = c.own_runnable_ns.saturating_add(c.other_runnable_ns);
        if all == 0 {
            0.0
        } else {
            c.own_runnable_ns as f64 / all as f64
        }
    });
    let mut by_cause: BTreeMap<Cause, f64> = BTreeMap::new();
    for i in 0..slices {
        let (s0, s1) = (i as u64 * slice_ns, (i as u64 + 1) * slice_ns);
        let mut running = 0u64;
        let mut runnable = 0u64;
        // Threads that wanted a CPU for most of the slice (ran or waited to run).
        let mut wanting = 0u64;
        let mut waits: BTreeMap<Cause, u64> = BTreeMap::new();
        let mut live = 0u64;
        let mut main_only_runs = true;
        let mut finished_worker = false;
        for (ti, t) in states.threads.iter().enumerate() {
            let Some(slice) = t.slices.get(i) else {
                continue;
            };
            let (b, e) = lives.get(ti).copied().unwrap_or((0, 0));
            let overlap = e.min(s1).saturating_sub(b.max(s0));
            if t.folded.is_none() {
                live += overlap;
                if !t.main && b < s0 && e <= s0 {
                    finished_worker = true;
                }
            }
            let mut accounted = 0u64;
            let awake: u64 = CATEGORIES
                .iter()
                .filter(|c| **c != Category::Blocked)
                .map(|c| slice[c.index()])
                .sum();
            if awake * 2 > slice_ns {
                wanting += 1;
            }
            for c in CATEGORIES {
                let ns = slice[c.index()];
                accounted += ns;
                if c == Category::Blocked {
                    continue;
                }
                if c == Category::Runnable {
                    runnable += ns;
                    continue;
                }
                match wait_cause(c) {
                    Some(cause) => *waits.entry(cause).or_default() += ns,
                    None => {
                        running += ns;
                        if ns > 0 && !t.main {
                            main_only_runs = false;
                        }
                    }
                }
            }
            // Alive, not sampled in any state: ready to run and waiting for a CPU (a guess made
            // only without the kernel's figures, which measure the runnable time itself).
            if t.folded.is_none() && t.kernel.is_none() {
                *waits.entry(Cause::Oversubscription).or_default() +=
                    overlap.saturating_sub(accounted);
            }
        }
        let slots = width * slice_ns;
        // Ready to run: with more of the program's threads wanting a CPU than there are slots,
        // its own oversubscription; otherwise other processes held the CPUs, those slots were
        // not the program's to fill, and the loss they explain is left to the residual.
        // (The threads beyond the slots can have waited at most a slice each, and only the
        // share of runnable time the analysis found the program's own.)
        let own =
            ((runnable as f64 * own_share) as u64).min(wanting.saturating_sub(width) * slice_ns);
        if own > 0 {
            *waits.entry(Cause::Oversubscription).or_default() += own;
        }
        let idle = slots.saturating_sub(running).saturating_sub(runnable - own);
        if idle == 0 {
            continue;
        }
        // Slots no live thread could fill: the program had fewer threads than slots.
        let missing = slots.saturating_sub(live);
        let structural = if main_only_runs || !finished_worker {
            Cause::SerialSection
        } else {
            Cause::LoadImbalance
        };
        *waits.entry(structural).or_default() += missing;
        let total: u64 = waits.values().sum();
        if total == 0 {
            *by_cause.entry(structural).or_default() += idle as f64;
            continue;
        }
        // Waits beyond the idle slots overlap each other: charge each its part of the idle.
        let scale = (idle as f64 / total as f64).min(1.0);
        let mut charged = 0.0;
        for (cause, ns) in waits {
            let part = ns as f64 * scale;
            charged += part;
            *by_cause.entry(cause).or_default() += part;
        }
        // Idle slots with no thread waiting: threads blocked (joins, condition variables).
        if (idle as f64) > charged {
            *by_cause.entry(structural).or_default() += idle as f64 - charged;
        }
    }

    let mut out = Vec::new();
    for (cause, ns) in by_cause {
        if ns <= 0.0 {
            continue;
        }
        let frames = cause_frames(states, cause);
        if frames.is_empty() {
            out.push(IdleCost {
                cause,
                user_frame: String::new(),
                ns,
            });
            continue;
        }
        let total: u64 = frames.iter().map(|f| f.1).sum::<u64>().max(1);
        for (frame, weight) in frames {
            out.push(IdleCost {
                cause,
                user_frame: frame,
                ns: ns * weight as f64 / total as f64,
            });
        }
    }
    out
}

/// Where the program was when a cause's time was spent: the user frames of its sampled sites,
/// one per function (the line of its heaviest site), with their time (the heaviest few; the rest
/// joins the last one listed).
fn cause_frames(states: &StateReport, cause: Cause) -> Vec<(String, u64)> {
    const MAX_FRAMES: usize = 3;
    // function -> (text of its heaviest site, that site's time, total time)
    let mut frames: BTreeMap<String, (String, u64, u64)> = BTreeMap::new();
    for t in &states.threads {
        for site in &t.sites {
            let matches = match cause {
                Cause::SerialSection => t.main && site.category == Category::Compute,
                Cause::LoadImbalance => !t.main && site.category == Category::Compute,
                Cause::Oversubscription => false,
                _ => wait_cause(site.category) == Some(cause),
            };
            // The profiler's own work (heap snapshots: its frames inside the program's) and
            // stacks with no frame of the program name no place in it. The interposer's frames
            // outside the user's (the wrapper that calls main) do not make a stack its own.
            let user = site.user_frame();
            let own = site
                .frames
                .iter()
                .take_while(|f| user.is_none_or(|u| !std::ptr::eq(*f, u)))
                .any(|f| f.module_name().starts_with("libstallscope"));
            let in_program = site.user_frame().is_some_and(|f| !is_runtime_frame(f));
            if !matches || own || (structural(cause) && !in_program) {
                continue;
            }
            let frame = site.user_frame().or(site.frames.first());
            let function = frame.map(Frame::short_name).unwrap_or_default();
            let text = match (cause, site.lock()) {
                (Cause::Lock, Some(lock)) => format!(
                    "{} in {} in {}",
                    lock.name,
                    site.function(),
                    frame_text(frame)
                ),
                (Cause::Lock | Cause::Io, _) => {
                    format!("{} in {}", site.function(), frame_text(frame))
                }
                _ => frame_text(frame),
            };
            let key = match cause {
                Cause::Lock | Cause::Io => format!("{} {function}", site.function()),
                _ => function,
            };
            let entry = frames.entry(key).or_insert((text.clone(), 0, 0));
            if site.ns > entry.1 {
                entry.0 = text;
                entry.1 = site.ns;
            }
            entry.2 += site.ns;
        }
    }
    let mut list: Vec<(String, u64)> = frames
        .into_values()
        .map(|(text, _, ns)| (text, ns))
        .collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if list.len() > MAX_FRAMES {
        let rest: u64 = list[MAX_FRAMES..].iter().map(|f| f.1).sum();
        list.truncate(MAX_FRAMES);
        list[MAX_FRAMES - 1].1 += rest;
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::states::{CATEGORY_COUNT, StateSite, ThreadStates};
    use crate::profile::ThreadStats;

    fn thread(serial: u32, begin: u64, end: u64) -> ThreadStats {
        ThreadStats::quiet(serial, serial, "t", begin, end)
    }

    fn site(category: Category, function: &str, line: u32, ns: u64) -> StateSite {
        StateSite {
            category,
            frames: vec![Frame {
                function: Some(function.into()),
                file: Some("/src/p.c".into()),
                line: Some(line),
                module: "/tmp/p".into(),
                offset: 0x10,
                inlined: false,
            }],
            decided_by: None,
            user: 0,
            samples: 1,
            ns,
            locks: Vec::new(),
        }
    }

    fn states(main: bool, slices: &[(Category, u64)], sites: Vec<StateSite>) -> ThreadStates {
        ThreadStates {
            main,
            slices: slices
                .iter()
                .map(|&(c, ns)| {
                    let mut s = [0; CATEGORY_COUNT];
                    s[c.index()] = ns;
                    s
                })
                .collect(),
            sites,
            ..ThreadStates::default()
        }
    }

    #[test]
    fn idle_slots_go_to_the_serial_section_imbalance_and_lock_waits() {
        use Category::{Blocked, Compute, Lock};
        // Slices of 10 ns, 2 slots. Slice 0: main alone (serial). Slice 1: both workers run.
        // Slice 2: w2 has finished, w1 runs on (imbalance). Slice 3: w1 waits for a lock.
        let mut analysis = Analysis::default();
        analysis.profile.threads = vec![thread(1, 0, 40), thread(2, 10, 40), thread(3, 10, 20)];
        analysis.states = Some(StateReport {
            slice_ns: 10,
            wall_ns: 40,
            cpus: 2,
            threads: vec![
                states(
                    true,
                    &[(Compute, 10), (Blocked, 10), (Blocked, 10), (Blocked, 10)],
                    vec![site(Compute, "prepare", 3, 10)],
                ),
                states(
                    false,
                    &[(Compute, 0), (Compute, 10), (Compute, 10), (Lock, 10)],
                    vec![
                        site(Compute, "work", 9, 20),
                        site(Lock, "pthread_mutex_lock", 12, 10),
                    ],
                ),
                states(
                    false,
                    &[(Compute, 0), (Compute, 10), (Compute, 0), (Compute, 0)],
                    vec![site(Compute, "work", 9, 10)],
                ),
            ],
            ..StateReport::default()
        });
        let costs = costs(&analysis, 2).unwrap();
        let of = |cause: Cause| -> Vec<(String, f64)> {
            costs
                .idle
                .iter()
                .filter(|c| c.cause == cause)
                .map(|c| (c.user_frame.clone(), c.ns))
                .collect()
        };
        assert_eq!(
            of(Cause::SerialSection),
            vec![("prepare at p.c:3".to_string(), 20.0)]
        );
        assert_eq!(
            of(Cause::LoadImbalance),
            vec![("work at p.c:9".to_string(), 10.0)]
        );
        assert_eq!(
            of(Cause::Lock),
            vec![(
                "pthread_mutex_lock in pthread_mutex_lock at p.c:12".to_string(),
                10.0
            )]
        );
        // One slot per thread at most: a 1-thread run has no idle slot while its thread runs.
        let one = super::costs(&analysis, 1).unwrap();
        assert!(one.idle.iter().all(|c| c.cause != Cause::LoadImbalance));
    }
}
