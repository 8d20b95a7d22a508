//! Derived figures of a profile, shared by the terminal report, the JSON and `run`'s summary.
//! Durations are estimates where calls were timed on a sample: a function's time is its sampled
//! time scaled by calls / timed calls (an unbiased estimate, since the sample is random).

use crate::profile::Profile;
use crate::profile::format::*;

#[derive(Debug, Clone)]
pub struct ThreadSummary {
    pub tid: u32,
    pub name: String,
    pub main: bool,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    pub alloc_ns: u64,
    pub alloc_calls: u64,
    pub lock_wait_ns: u64,
    /// How many short threads the row stands for, when they were folded into one group.
    pub folded: Option<u32>,
    /// The thread blocked the sampling signal: its states came from the kernel's CPU clock.
    pub signal_blocked: bool,
}

#[derive(Debug, Clone)]
pub struct FnSummary {
    pub name: &'static str,
    pub calls: u64,
    pub bytes: u64,
    pub timed_calls: u64,
    pub time_ns: u64,
    /// Estimated number of calls per latency bucket: (min_ns, max_ns, count).
    pub latency: Vec<(u64, u64, u64)>,
}

impl FnSummary {
    pub fn mean_ns(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.time_ns as f64 / self.calls as f64
        }
    }

    /// The latency at quantile `q`, interpolated within its power-of-two bucket.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        latency_quantile(&self.latency, q)
    }
}

/// The quantile `q` of latency buckets `(min_ns, max_ns, count)`, interpolated within its bucket.
pub fn latency_quantile(latency: &[(u64, u64, u64)], q: f64) -> Option<f64> {
    let total: u64 = latency.iter().map(|b| b.2).sum();
    if total == 0 {
        return None;
    }
    let target = q * total as f64;
    let mut seen = 0.0;
    for &(lo, hi, count) in latency {
        if count == 0 {
            continue;
        }
        if seen + count as f64 >= target {
            let frac = ((target - seen) / count as f64).clamp(0.0, 1.0);
            return Some(lo as f64 + frac * (hi - lo) as f64);
        }
        seen += count as f64;
    }
    latency.last().map(|b| b.1 as f64)
}

#[derive(Debug, Clone)]
pub struct LockSummary {
    pub address: u64,
    pub kind: &'static str,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    pub hold_ns: u64,
    pub threads: usize,
    /// Stacks of the threads that waited (filled by `report`, which resolves symbols).
    pub sites: Vec<super::sites::LockSiteSummary>,
    /// Stacks of the threads that released the lock while others waited.
    pub holder_sites: Vec<super::sites::LockSiteSummary>,
}

#[derive(Debug, Clone)]
pub struct Summary {
    pub command: Vec<String>,
    pub exe: String,
    pub pid: u32,
    pub ppid: u32,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub complete: bool,
    pub ended_by_exec: bool,
    pub core_dumped: bool,
    pub forked: bool,
    pub start_time_unix_ns: u64,
    pub flushes: u64,
    pub wall_ns: u64,
    pub ncpus: u32,
    pub libc_version: String,
    pub allocator: String,
    pub timing_exact: bool,
    pub timing_period: u32,
    pub threads: Vec<ThreadSummary>,
    /// The report's five groups: malloc, calloc, realloc, free, aligned.
    pub groups: Vec<FnSummary>,
    /// Each of the ten functions separately.
    pub functions: Vec<FnSummary>,
    pub size_hist: Vec<u64>,
    pub locks: Vec<LockSummary>,
    /// Sampled allocation sites, symbolized (filled by `report`, which resolves symbols).
    pub alloc_sites: Vec<super::sites::SiteSummary>,
    pub stack_sampling: Option<crate::profile::StackSampling>,
    /// Frees of memory another thread allocated (glibc's allocator only; None when not measured).
    pub cross_frees: Option<CrossFreeSummary>,
}

/// Estimated from the sampled frees: of those the arena check placed, the share in another
/// arena than the freeing thread's, applied to all frees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossFreeSummary {
    pub sampled: u64,
    pub sampled_cross: u64,
    pub share: f64,
    pub calls: u64,
}

fn cross_frees(p: &Profile) -> Option<CrossFreeSummary> {
    let sampled: u64 = p.cross_frees.iter().map(|c| c.checked).sum();
    let sampled_cross: u64 = p.cross_frees.iter().map(|c| c.cross).sum();
    if sampled == 0 || !p.process.allocator.contains("libc.so") {
        return None;
    }
    let frees: u64 = p.threads.iter().map(|t| t.fns[FN_FREE].calls).sum();
    let share = sampled_cross as f64 / sampled as f64;
    Some(CrossFreeSummary {
        sampled,
        sampled_cross,
        share,
        calls: (share * frees as f64).round() as u64,
    })
}

impl Summary {
    /// Threads the profile speaks of, a folded group counting as its threads.
    pub fn thread_count(&self) -> u64 {
        self.threads
            .iter()
            .map(|t| t.folded.map_or(1, u64::from))
            .sum()
    }

    pub fn alloc_calls(&self) -> u64 {
        self.groups.iter().map(|g| g.calls).sum()
    }
    pub fn alloc_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.alloc_ns).sum()
    }
    pub fn thread_wall_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.wall_ns).sum()
    }
    pub fn cpu_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.cpu_ns).sum()
    }
    pub fn lock_wait_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.lock_wait_ns).sum()
    }
    /// Share of all threads' lifetimes spent inside the allocator.
    pub fn alloc_share(&self) -> f64 {
        ratio(self.alloc_ns(), self.thread_wall_ns())
    }
    pub fn lock_share(&self) -> f64 {
        ratio(self.lock_wait_ns(), self.thread_wall_ns())
    }
    /// Share of allocation requests at or below `bytes`.
    pub fn size_share_at_most(&self, bytes: u64) -> f64 {
        let total: u64 = self.size_hist.iter().sum();
        let below: u64 = (0..SIZE_BUCKETS)
            .filter(|&b| size_bucket_range(b).1 <= bytes)
            .map(|b| self.size_hist[b])
            .sum();
        ratio(below, total)
    }
}

pub fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// Scales a sampled duration to all calls.
fn estimate(timed_ticks: u64, timed_calls: u64, calls: u64) -> f64 {
    if timed_calls == 0 {
        0.0
    } else {
        timed_ticks as f64 * calls as f64 / timed_calls as f64
    }
}

fn fn_summary(
    p: &Profile,
    name: &'static str,
    members: &[usize],
    group: Option<usize>,
) -> FnSummary {
    let (mut calls, mut bytes, mut timed_calls, mut ticks) = (0u64, 0u64, 0u64, 0.0f64);
    let mut raw_latency = [0u64; LAT_BUCKETS];
    for t in &p.threads {
        for &i in members {
            let f = &t.fns[i];
            calls += f.calls;
            bytes += f.bytes;
            timed_calls += f.measured_calls();
            ticks += f.estimated_ticks();
        }
        if let Some(g) = group {
            for (acc, v) in raw_latency.iter_mut().zip(t.lat_hist[g].iter()) {
                *acc += v;
            }
        }
    }
    // The interposer weights each measured call by what it stands for: the counts already
    // estimate all calls.
    let latency = raw_latency
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, &c)| {
            let (lo, hi) = latency_bucket_range(b);
            (lo, hi, c)
        })
        .collect();
    FnSummary {
        name,
        calls,
        bytes,
        timed_calls,
        time_ns: (ticks * 1e9 / p.ticks_per_sec).round() as u64,
        latency,
    }
}

pub fn summarize(p: &Profile) -> Summary {
    let threads = p
        .threads
        .iter()
        .map(|t| {
            let end = p.thread_end_ns(t);
            let alloc_ticks: f64 = t.fns.iter().map(|f| f.estimated_ticks()).sum();
            ThreadSummary {
                tid: t.tid,
                name: t.name.clone(),
                main: t.flags & THREAD_MAIN != 0,
                cpu_ns: t.cpu_ns,
                wall_ns: t.life_ns(end),
                alloc_ns: (alloc_ticks * 1e9 / p.ticks_per_sec).round() as u64,
                alloc_calls: t
                    .fns
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != FN_FREE)
                    .map(|(_, f)| f.calls)
                    .sum(),
                lock_wait_ns: p.ticks_to_ns(t.lock_wait_ticks),
                folded: t.folded.map(|f| f.threads),
                signal_blocked: t.flags & THREAD_SIGNAL_BLOCKED != 0,
            }
        })
        .collect();
    let groups = GROUPS
        .iter()
        .enumerate()
        .map(|(g, (name, members))| fn_summary(p, name, members, Some(g)))
        .collect();
    let functions = FN_NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| fn_summary(p, name, &[i], None))
        .collect();
    let mut size_hist = vec![0u64; SIZE_BUCKETS];
    for t in &p.threads {
        for (acc, v) in size_hist.iter_mut().zip(t.size_hist.iter()) {
            *acc += v;
        }
    }
    Summary {
        command: p.process.command.clone(),
        exe: p.process.exe.clone(),
        pid: p.process.pid,
        ppid: p.process.ppid,
        exit_code: p.exit_code(),
        signal: p.signal(),
        complete: p.complete,
        ended_by_exec: p.end.is_some_and(|e| e.how == END_EXEC),
        core_dumped: p.supervisor.is_some_and(|s| s.core_dumped),
        forked: p.process.forked,
        start_time_unix_ns: p.process.start_realtime_ns,
        flushes: p.flushes,
        wall_ns: p
            .supervisor
            .map_or(p.wall_ns(), |s| s.wall_ns.max(p.wall_ns())),
        ncpus: p.process.ncpus,
        libc_version: p.process.libc_version.clone(),
        allocator: p.process.allocator.clone(),
        timing_exact: p.process.timing_exact,
        timing_period: p.process.timing_period,
        threads,
        groups,
        functions,
        size_hist,
        alloc_sites: Vec::new(),
        stack_sampling: None,
        cross_frees: cross_frees(p),
        locks: merge_locks(p),
    }
}

/// One row per lock object (address and kind), summed over the threads that took it.
fn merge_locks(p: &Profile) -> Vec<LockSummary> {
    let mut locks: Vec<LockSummary> = Vec::new();
    for t in &p.threads {
        for l in &t.locks {
            // Address 0 is the overflow entry: locks beyond a thread's table, of any kind.
            let kind = if l.address == 0 {
                "other"
            } else {
                lock_kind_name(l.kind)
            };
            let hold = estimate(l.hold_ticks, l.timed_holds, l.acquisitions);
            let hold_ns = (hold * 1e9 / p.ticks_per_sec).round() as u64;
            let wait_ns = p.ticks_to_ns(l.wait_ticks);
            let max_wait_ns = p.ticks_to_ns(l.max_wait_ticks);
            match locks
                .iter_mut()
                .find(|x| x.address == l.address && x.kind == kind)
            {
                Some(x) => {
                    x.acquisitions += l.acquisitions;
                    x.contended += l.contended;
                    x.wait_ns += wait_ns;
                    x.max_wait_ns = x.max_wait_ns.max(max_wait_ns);
                    x.hold_ns += hold_ns;
                    x.threads += 1;
                }
                None => locks.push(LockSummary {
                    address: l.address,
                    kind,
                    acquisitions: l.acquisitions,
                    contended: l.contended,
                    wait_ns,
                    max_wait_ns,
                    hold_ns,
                    threads: 1,
                    sites: Vec::new(),
                    holder_sites: Vec::new(),
                }),
            }
        }
    }
    locks.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.acquisitions.cmp(&a.acquisitions))
    });
    locks
}
