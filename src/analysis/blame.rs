//! Blame shifting: the time threads spend waiting for work is charged to the work that ran
//! meanwhile (HPCToolkit's undirected blame, `shared/research/blame.md`).
//!
//! Each thread-state sample stands for the interval just before it, and says what the thread
//! did then: it worked (computed, allocated, faulted pages in, did I/O), it waited for work (a
//! runtime's barrier or idle loop, a condition variable, a join, a semaphore, a latch: a wait
//! that another thread of the program ends), or something else (a lock, a CPU, input from
//! outside the process: those have causes of their own). At every moment, the threads waiting
//! for work while others work lose what a free CPU could have done; that loss is shared out
//! among the working threads' code, so a serial stretch or the long tail of an uneven split
//! collects the idleness it caused at its own line, whatever the waiting primitive or runtime.
//! A waiting thread is charged only while a CPU was free for it (the working threads fewer
//! than the CPUs): behind a full machine nothing was lost. Waiting while nothing of the
//! process works (for a client, a timer, input) is idle, charged to nothing.
//!
//! The state of a sample is decided by what the thread did (its classified state and system
//! call), never by a function's name.

use super::concurrency::Concurrency;
use super::runtime;
use super::states::{Category, SampledStack, StateReport, syscall_name, waits_for_input};
use super::summary::Summary;
use crate::profile::Profile;
use crate::profile::samples::SampleKind;
use crate::symbols::{Frame, called_frame, is_runtime_frame, user_frame};
use std::collections::HashMap;

/// What a thread did in a sample's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doing {
    Work,
    WaitingForWork,
    Other,
}

/// One stretch of a thread: [begin, end) ns from the process's start, what it did, its stack.
#[derive(Debug, Clone, Copy)]
struct Stretch {
    begin: u64,
    end: u64,
    doing: Doing,
    stack: u32,
    thread: usize,
}

/// Code that ran while other threads of the process waited for work.
#[derive(Debug, Clone, Default)]
pub struct Culprit {
    /// The working code's user frame (its heaviest line).
    pub frame: Frame,
    /// The frame that called it, outside the runtime (where it was started from).
    pub caller: Option<Frame>,
    /// The parallel construct or algorithm it ran in (`the parallel region in main at x.c:20`),
    /// when the runtime told which.
    pub construct: Option<String>,
    /// The threads that ran it while others waited (indexes into the states' threads), most
    /// time first.
    pub threads: Vec<usize>,
    /// Thread time it ran while others waited for work (summed over its threads).
    pub alone_ns: u64,
    /// Thread time it ran in all (while others waited or not).
    pub work_ns: u64,
    /// The waiting threads' time charged to it (thread time).
    pub charged_ns: u64,
    /// The wall time the run would save if its work in those stretches were shared out among
    /// the threads that waited (each stretch: its length x waiting / (working + waiting)).
    pub gain_ns: u64,
    /// The time two or more of its threads ran it at once.
    pub concurrent_ns: u64,
    /// What the waiting threads waited in while it ran, by their time, heaviest first.
    pub waits: Vec<(String, u64)>,
}

impl Culprit {
    /// Threads that waited, on average, while it ran alone.
    pub fn mean_waiting(&self) -> f64 {
        if self.alone_ns == 0 {
            0.0
        } else {
            self.charged_ns as f64 / self.alone_ns as f64
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Blame {
    /// Heaviest charge first.
    pub culprits: Vec<Culprit>,
    /// Thread time waiting for work while another thread worked and a CPU was free: charged.
    pub charged_ns: u64,
    /// Thread time waiting for work charged to nothing (nothing worked, or the CPUs were full).
    pub idle_ns: u64,
}

/// How many culprits are kept (the views list a few; findings take the heaviest).
const KEPT: usize = 8;

/// What a sample says the thread did.
fn doing(stack: &SampledStack, kind: SampleKind, syscall: Option<String>) -> Doing {
    // Asleep in a call that waits for the world outside (a client, a timer): neither work nor a
    // wait that another thread ends.
    if kind == SampleKind::Wall && syscall.as_deref().is_some_and(waits_for_input) {
        return Doing::Other;
    }
    match stack.category {
        Category::Compute | Category::Allocator | Category::KernelMemory | Category::Io => {
            Doing::Work
        }
        Category::Idle | Category::Blocked => Doing::WaitingForWork,
        _ => Doing::Other,
    }
}

/// Each thread's stretches from its samples, in time order, not overlapping.
fn stretches(profile: &Profile, states: &StateReport) -> Vec<Vec<Stretch>> {
    let index: HashMap<u32, usize> = states
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();
    let start = profile.process.start_mono_ns;
    let mut out: Vec<Vec<Stretch>> = vec![Vec::new(); states.threads.len()];
    for (i, s) in profile.samples.iter().enumerate() {
        let (Some(&ti), Some((ci, stack))) = (index.get(&s.serial), states.sample_stack(i)) else {
            continue;
        };
        if states.threads[ti].folded.is_some() {
            continue;
        }
        let end = s.mono_ns.saturating_sub(start);
        let syscall = s.syscall.map(|nr| syscall_name(nr, s.arg));
        out[ti].push(Stretch {
            begin: end.saturating_sub(s.weight_ns),
            end,
            doing: doing(stack, s.kind, syscall),
            stack: ci,
            thread: ti,
        });
    }
    for list in &mut out {
        list.sort_by_key(|s| (s.end, s.begin));
        let mut last_end = 0;
        for s in list.iter_mut() {
            s.begin = s.begin.max(last_end).min(s.end);
            last_end = s.end;
        }
        list.retain(|s| s.end > s.begin && s.doing != Doing::Other);
    }
    out
}

/// The running integrals over the run, by segment boundary: per working thread, the waiting
/// thread time charged to it, the wall time gained, and the time it ran while others waited.
struct Integrals {
    times: Vec<u64>,
    charged: Vec<f64>,
    gain: Vec<f64>,
    alone: Vec<f64>,
    /// The whole run's charged and uncharged waiting.
    charged_ns: f64,
    idle_ns: f64,
}

impl Integrals {
    /// `runnable`: the process's threads waiting for a CPU, per bin of `bin_ns` (the kernel's
    /// figures): a CPU a runnable thread waits for was not free for the waiting ones.
    fn build(all: &[&Stretch], cpus: u32, runnable: &[f64], bin_ns: u64) -> Integrals {
        let mut times: Vec<u64> = all.iter().flat_map(|s| [s.begin, s.end]).collect();
        // The bins' edges too, so that each segment lies in one bin.
        times.extend((0..runnable.len() as u64).map(|b| b * bin_ns));
        times.sort_unstable();
        times.dedup();
        let at = |t: u64| times.binary_search(&t).unwrap_or_else(|i| i);
        // Per segment [times[k], times[k + 1]): working and waiting threads, as differences.
        let mut working = vec![0i64; times.len() + 1];
        let mut waiting = vec![0i64; times.len() + 1];
        for s in all {
            let d = match s.doing {
                Doing::Work => &mut working,
                _ => &mut waiting,
            };
            d[at(s.begin)] += 1;
            d[at(s.end)] -= 1;
        }
        let p = f64::from(cpus.max(1));
        let n = times.len();
        let (mut charged, mut gain, mut alone) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let (mut w, mut i) = (0i64, 0i64);
        let (mut charged_ns, mut idle_ns) = (0.0, 0.0);
        for k in 0..n.saturating_sub(1) {
            w += working[k];
            i += waiting[k];
            let dt = (times[k + 1] - times[k]) as f64;
            let (wf, wi) = (w.max(0) as f64, i.max(0) as f64);
            let mid = times[k] / 2 + times[k + 1] / 2;
            let queued = runnable
                .get((mid / bin_ns.max(1)) as usize)
                .copied()
                .unwrap_or(0.0);
            // Waiting threads for which a CPU was free: not taken by a working thread, nor
            // wanted by a runnable one (a worker kept off its CPU by other load left the CPU
            // busy, not free: two workers beside other load had read as one working alone).
            let lost = if wf > 0.0 {
                wi.min((p - wf - queued).max(0.0))
            } else {
                0.0
            };
            let (c, g, a) = if lost > 0.0 {
                (lost / wf, lost / (wf + lost) / wf, 1.0)
            } else {
                (0.0, 0.0, 0.0)
            };
            charged[k + 1] = charged[k] + c * dt;
            gain[k + 1] = gain[k] + g * dt;
            alone[k + 1] = alone[k] + a * dt;
            charged_ns += lost * dt;
            idle_ns += (wi - lost) * dt;
        }
        Integrals {
            times,
            charged,
            gain,
            alone,
            charged_ns,
            idle_ns,
        }
    }

    /// (charged, gain, alone) over [begin, end), for one working thread.
    fn over(&self, begin: u64, end: u64) -> (f64, f64, f64) {
        let k = |t: u64| self.times.binary_search(&t).unwrap_or_else(|i| i);
        let (b, e) = (k(begin), k(end));
        (
            self.charged[e] - self.charged[b],
            self.gain[e] - self.gain[b],
            self.alone[e] - self.alone[b],
        )
    }
}

/// The key a working stack's time is grouped by: its user frame's function and file.
fn culprit_key(frame: &Frame) -> (String, String) {
    (frame.name(), frame.file.clone().unwrap_or_default())
}

/// The words for what a waiting stack waits in: the runtime's own name for it, else the
/// function the program called to wait (`pthread_join`, `pthread_cond_wait`).
fn wait_words(frames: &[Frame]) -> String {
    if let Some((entry, _)) = runtime::wait_of(frames) {
        return entry.object.clone();
    }
    let user = user_frame(frames);
    called_frame(frames, user)
        .and_then(|i| frames.get(i))
        .or_else(|| frames.first())
        .map_or_else(|| "?".to_string(), Frame::name)
}

#[derive(Default)]
struct Tally {
    frame_ns: HashMap<Frame, f64>,
    caller_ns: HashMap<Frame, f64>,
    thread_ns: HashMap<usize, f64>,
    charged: f64,
    gain: f64,
    alone: f64,
    work: u64,
    /// Its stretches that others waited through.
    charged_stretches: Vec<(u64, u64, usize)>,
}

pub fn build(
    profile: &Profile,
    states: &StateReport,
    concurrency: Option<&Concurrency>,
    summary: &Summary,
) -> Option<Blame> {
    let per_thread = stretches(profile, states);
    let all: Vec<&Stretch> = per_thread.iter().flatten().collect();
    if all.is_empty() {
        return None;
    }
    let cpus = concurrency.map_or(states.cpus, |c| c.cpus).max(1);
    let runnable: Vec<f64> =
        concurrency.map_or_else(Vec::new, |c| c.bins.iter().map(|b| b.runnable).collect());
    let bin_ns = concurrency.map_or(1, |c| c.bin_ns);
    let integrals = Integrals::build(&all, cpus, &runnable, bin_ns);
    let mut tallies: HashMap<(String, String), Tally> = HashMap::new();
    for s in all.iter().filter(|s| s.doing == Doing::Work) {
        let Some(stack) = states.stacks.get(s.stack as usize) else {
            continue;
        };
        let frames = &stack.frames;
        let Some(frame) = frames.get(user_frame(frames)) else {
            continue;
        };
        let t = tallies.entry(culprit_key(frame)).or_default();
        t.work += s.end - s.begin;
        let (charged, gain, alone) = integrals.over(s.begin, s.end);
        if alone <= 0.0 {
            continue;
        }
        t.charged += charged;
        t.gain += gain;
        t.alone += alone;
        *t.frame_ns.entry(frame.clone()).or_default() += charged;
        let caller = frames[user_frame(frames) + 1..]
            .iter()
            .find(|f| !is_runtime_frame(f) && f.function.is_some());
        if let Some(c) = caller {
            *t.caller_ns.entry(c.clone()).or_default() += charged;
        }
        *t.thread_ns.entry(s.thread).or_default() += alone;
        t.charged_stretches.push((s.begin, s.end, s.thread));
    }
    let heaviest = |m: &HashMap<Frame, f64>| {
        m.iter()
            .max_by(|a, b| {
                a.1.total_cmp(b.1)
                    .then_with(|| b.0.display().cmp(&a.0.display()))
            })
            .map(|(f, _)| f.clone())
    };
    let mut culprits: Vec<(Culprit, Vec<(u64, u64, usize)>)> = tallies
        .into_values()
        .filter(|t| t.charged >= 1.0)
        .map(|t| {
            let mut threads: Vec<(usize, f64)> =
                t.thread_ns.iter().map(|(&k, &v)| (k, v)).collect();
            threads.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let culprit = Culprit {
                frame: heaviest(&t.frame_ns).unwrap_or_default(),
                caller: heaviest(&t.caller_ns),
                construct: None,
                threads: threads.iter().map(|x| x.0).collect(),
                alone_ns: t.alone as u64,
                work_ns: t.work,
                charged_ns: t.charged as u64,
                gain_ns: t.gain as u64,
                concurrent_ns: concurrent(&t.charged_stretches),
                waits: Vec::new(),
            };
            (culprit, t.charged_stretches)
        })
        .collect();
    culprits.sort_by(|(a, _), (b, _)| {
        b.charged_ns
            .cmp(&a.charged_ns)
            .then_with(|| a.frame.display().cmp(&b.frame.display()))
    });
    culprits.truncate(KEPT);
    // For the kept ones: what the other threads waited in while they ran, and the parallel
    // construct around them.
    for (c, mine) in &mut culprits {
        let union = union_of(mine);
        let mut waits: HashMap<String, u64> = HashMap::new();
        for s in all.iter().filter(|s| s.doing == Doing::WaitingForWork) {
            let overlap = overlap_ns(&union, s.begin, s.end);
            let Some(stack) = states.stacks.get(s.stack as usize).filter(|_| overlap > 0) else {
                continue;
            };
            *waits.entry(wait_words(&stack.frames)).or_default() += overlap;
        }
        let mut waits: Vec<(String, u64)> = waits.into_iter().collect();
        waits.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        c.waits = waits;
        c.construct = summary
            .omp_runs
            .iter()
            .map(|r| (overlap_ns(&union, r.begin_ns, r.end_ns), r))
            .filter(|(o, _)| *o > 0)
            .max_by_key(|(o, _)| *o)
            .map(|(_, r)| r.words(&summary.omp_regions));
    }
    let culprits = culprits.into_iter().map(|(c, _)| c).collect();
    Some(Blame {
        culprits,
        charged_ns: integrals.charged_ns as u64,
        idle_ns: integrals.idle_ns as u64,
    })
}

/// The time two or more threads' stretches overlap.
fn concurrent(stretches: &[(u64, u64, usize)]) -> u64 {
    let mut events: Vec<(u64, i32)> = stretches
        .iter()
        .flat_map(|&(b, e, _)| [(b, 1), (e, -1)])
        .collect();
    events.sort_unstable();
    let (mut depth, mut last, mut total) = (0i32, 0u64, 0u64);
    for (t, d) in events {
        if depth >= 2 {
            total += t - last;
        }
        depth += d;
        last = t;
    }
    total
}

/// The union of stretches, as sorted disjoint intervals.
fn union_of(stretches: &[(u64, u64, usize)]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = stretches.iter().map(|&(b, e, _)| (b, e)).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (b, e) in v {
        match out.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => out.push((b, e)),
        }
    }
    out
}

/// How much of [begin, end) sorted disjoint `union` covers.
fn overlap_ns(union: &[(u64, u64)], begin: u64, end: u64) -> u64 {
    let first = union.partition_point(|&(_, e)| e <= begin);
    union[first..]
        .iter()
        .take_while(|&&(b, _)| b < end)
        .map(|&(b, e)| e.min(end).saturating_sub(b.max(begin)))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stretch(begin: u64, end: u64, doing: Doing, thread: usize) -> Stretch {
        Stretch {
            begin,
            end,
            doing,
            stack: 0,
            thread,
        }
    }

    #[test]
    fn a_lone_worker_is_charged_its_waiters_time_while_a_cpu_was_free() {
        // Thread 0 works 0-100; thread 1 works 0-40, then waits for work 40-100.
        let s = [
            stretch(0, 100, Doing::Work, 0),
            stretch(0, 40, Doing::Work, 1),
            stretch(40, 100, Doing::WaitingForWork, 1),
        ];
        let all: Vec<&Stretch> = s.iter().collect();
        let i = Integrals::build(&all, 2, &[], 1);
        assert_eq!(i.charged_ns as u64, 60);
        assert_eq!(i.idle_ns as u64, 0);
        let (charged, gain, alone) = i.over(0, 100);
        assert_eq!((charged as u64, gain as u64, alone as u64), (60, 30, 60));
        // On one CPU nothing was lost: the waiter had no CPU to work on.
        let one = Integrals::build(&all, 1, &[], 1);
        assert_eq!(one.charged_ns as u64, 0);
        assert_eq!(one.idle_ns as u64, 60);
        // Nor while another thread of the process waited for the free CPU.
        let queued = Integrals::build(&all, 2, &[0.0, 1.0], 50);
        assert_eq!(queued.charged_ns as u64, 10);
    }

    #[test]
    fn waiting_while_nothing_works_is_idle() {
        let s = [
            stretch(0, 50, Doing::WaitingForWork, 0),
            stretch(0, 50, Doing::WaitingForWork, 1),
            stretch(50, 60, Doing::Work, 0),
        ];
        let all: Vec<&Stretch> = s.iter().collect();
        let i = Integrals::build(&all, 4, &[], 1);
        assert_eq!(i.charged_ns as u64, 0);
        assert_eq!(i.idle_ns as u64, 100);
    }

    #[test]
    fn two_workers_share_what_two_waiters_lose() {
        let s = [
            stretch(0, 10, Doing::Work, 0),
            stretch(0, 10, Doing::Work, 1),
            stretch(0, 10, Doing::WaitingForWork, 2),
            stretch(0, 10, Doing::WaitingForWork, 3),
        ];
        let all: Vec<&Stretch> = s.iter().collect();
        let i = Integrals::build(&all, 4, &[], 1);
        let (charged, gain, _) = i.over(0, 10);
        // Each worker is charged one waiter's 10; together the stretch would take half as long.
        assert!((charged - 10.0).abs() < 1e-9);
        assert!((2.0 * gain - 5.0).abs() < 1e-9);
    }

    #[test]
    fn overlaps_and_unions() {
        let u = union_of(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)]);
        assert_eq!(u, vec![(0, 20), (30, 40)]);
        assert_eq!(overlap_ns(&u, 15, 35), 10);
        assert_eq!(concurrent(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)]), 5);
    }
}
