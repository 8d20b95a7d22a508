//! The summary stage of the analysis: per-thread, per-function and per-lock figures of a profile.
//! Durations are estimates where calls were timed on a sample: a function's time is its sampled
//! time scaled by calls / timed calls (an unbiased estimate, since the sample is random). Counters
//! from the file are added with saturation: a damaged or hostile file cannot overflow them.

use crate::profile::Profile;
use crate::profile::format::*;
use crate::util::ratio;

mod alloc_time;
mod omp;
pub use alloc_time::*;
pub use omp::*;

#[derive(Debug, Clone, Default)]
pub struct ThreadSummary {
    /// The profile's serial of the thread (or group): what joins it to its states.
    pub serial: u32,
    pub tid: u32,
    pub name: String,
    pub main: bool,
    pub cpu_ns: u64,
    pub wall_ns: u64,
    /// The allocator calls' summed durations (timed on a sample, scaled to all calls): wall
    /// time inside the calls, waits for a CPU or a lock included.
    pub alloc_ns: u64,
    /// The allocator's time on a CPU, at most `cpu_ns` (see `net_allocator_time`): what shares of
    /// CPU time are taken of.
    pub alloc_cpu_ns: u64,
    /// The CPU samples `alloc_cpu_ns` was taken from (0: from the calls' own timing).
    pub alloc_cpu_samples: u64,
    pub alloc_calls: u64,
    pub lock_wait_ns: u64,
    /// How many short threads the row stands for, when they were folded into one group.
    pub folded: Option<u32>,
    /// How many of the threads the row stands for called the allocator (0 or 1 for a thread).
    pub allocating: u64,
    /// The thread blocked the sampling signal: its states came from the kernel's CPU clock.
    pub signal_blocked: bool,
}

impl ThreadSummary {
    /// The thread's time in the allocator: on a CPU (`alloc_cpu_ns`) where `on_cpu`, else the
    /// calls' timed length (`alloc_ns`). `Summary::allocator_ns_of` says which the views show.
    pub fn allocator_ns(&self, on_cpu: bool) -> u64 {
        if on_cpu {
            self.alloc_cpu_ns
        } else {
            self.alloc_ns
        }
    }
}

#[derive(Debug, Clone, Default)]
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
        ratio(self.time_ns, self.calls)
    }

    /// The latency at quantile `q`, interpolated within its power-of-two bucket.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        latency_quantile(&self.latency, q)
    }
}

/// The quantile `q` of latency buckets `(min_ns, max_ns, count)`, interpolated within its bucket.
pub fn latency_quantile(latency: &[(u64, u64, u64)], q: f64) -> Option<f64> {
    let total = sum(latency.iter().map(|b| b.2));
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

#[derive(Debug, Clone, Default)]
pub struct LockSummary {
    pub address: u64,
    pub kind: &'static str,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
    pub max_wait_ns: u64,
    /// The holds' summed time, estimated from the timed ones (`hold_known` says whether it is
    /// worth stating).
    pub hold_ns: u64,
    /// Holds timed (1 in the lock timing period): what `hold_ns` was estimated from.
    pub timed_holds: u64,
    pub threads: usize,
    /// Stacks of the threads that waited (filled by `report`, which resolves symbols).
    pub sites: Vec<super::sites::LockSiteSummary>,
    /// Stacks of the threads that released the lock while others waited.
    pub holder_sites: Vec<super::sites::LockSiteSummary>,
    /// A lock of a runtime that waits on futex words (Rust's std, parking_lot, ...): what the
    /// runtime calls it (None: a pthread lock, or a futex word no runtime entry point named).
    pub runtime: Option<super::futex::RuntimeLock>,
}

/// Fewer timed holds than this make a lock's summed hold a guess, not an estimate: GNU sort's
/// merge lock, 91 acquisitions with one hold timed, read "398.1 µs held in total" beside 288 ms
/// that its waiters waited for it.
pub const MIN_TIMED_HOLDS: u64 = 10;

impl LockSummary {
    /// The summed hold, where enough holds were timed to estimate it (all of them, or at least
    /// `MIN_TIMED_HOLDS`).
    pub fn hold_known(&self) -> Option<u64> {
        (self.timed_holds >= self.acquisitions.min(MIN_TIMED_HOLDS)).then_some(self.hold_ns)
    }

    /// What the lock is, as the views say it: the runtime's name for it (`std::sync::Mutex`),
    /// else its kind (`mutex`, `rwlock-read`, `futex`).
    pub fn kind_text(&self) -> &str {
        self.runtime
            .as_ref()
            .map_or(self.kind, |r| r.object.as_str())
    }

    /// The lock's address as the report writes it: `0x55cc97d63080`.
    pub fn address_text(&self) -> String {
        format!("{:#x}", self.address)
    }
}

/// The window of a running process that an attached profile holds (`stallscope attach`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AttachSummary {
    /// How the interposer came to be there: `paused` (`run --paused`) or `injected` (ptrace).
    pub how: &'static str,
    /// 1 for the process's first window, 2 for the next, ...
    pub window: u32,
    /// How long the window was open (the profile's wall time).
    pub window_ns: u64,
    /// The process's life up to the window's end.
    pub process_ns: u64,
    /// The window was closed by detaching: the process went on (else it ended in the window, or
    /// the file was cut short).
    pub detached: bool,
}

/// The CPython interpreter a process ran (docs/STACKS.md, "Python frames").
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PythonSummary {
    /// `3.11`, or `unknown`.
    pub version: String,
    /// Its stacks show the Python frames beside the native ones.
    pub frames: bool,
    /// Why they do not, in words (absent where they do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A process that entered a seccomp sandbox, where the interposer ended its recording (END how
/// `sandbox`): the profile holds its life up to there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SandboxSummary {
    /// From the process's start to the filter's installation (the profile's wall time).
    pub recorded_ns: u64,
    /// The process's whole life, where `stallscope run` saw it end (else None).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_ns: Option<u64>,
}

impl SandboxSummary {
    /// What the profile covers, in the words every view uses.
    pub fn describe(&self) -> String {
        let of = match self.process_ns {
            Some(ns) => format!(" of the process's {}", crate::util::fmt_ns(ns)),
            None => String::new(),
        };
        format!(
            "the profile ends after {}{of}, where the process installed a seccomp filter: such a filter may kill it for any system call it does not expect, so stallscope stops recording there; the process went on unrecorded, and so do the programs it runs next",
            crate::util::fmt_ns(self.recorded_ns)
        )
    }
}

#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub command: Vec<String>,
    pub exe: String,
    pub pid: u32,
    pub ppid: u32,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub complete: bool,
    /// The file was cut at this byte; the figures are those of its last whole flush.
    pub cut_at: Option<u64>,
    pub ended_by_exec: bool,
    /// The profile holds a window of a running process (None: the whole process).
    pub attach: Option<AttachSummary>,
    /// The process installed a seccomp filter, and the profile ends there (None: it does not).
    pub sandbox: Option<SandboxSummary>,
    /// The CPython interpreter it ran, if any.
    pub python: Option<PythonSummary>,
    pub core_dumped: bool,
    pub forked: bool,
    pub rwlock_steps: bool,
    pub mutex_steps: bool,
    /// No unwinder could be loaded: no stacks (see `ProcessInfo::no_unwinder`).
    pub no_unwinder: bool,
    /// See `ProcessInfo::heap_unchecked` and `arenas_unread`.
    pub heap_unchecked: bool,
    pub arenas_unread: bool,
    pub start_time_unix_ns: u64,
    pub flushes: u64,
    pub wall_ns: u64,
    pub ncpus: u32,
    pub libc_version: String,
    pub allocator: String,
    pub timing_exact: bool,
    pub timing_period: u32,
    /// An allocator function's period in a thread once the thread had timed enough of its calls
    /// (PROCESS flag TIMING_LONGER); `timing_period` where it never lengthens.
    pub longer_timing_period: u32,
    pub lock_timing_period: u32,
    pub threads: Vec<ThreadSummary>,
    /// The threads' allocator times on a CPU (`alloc_cpu_ns`) come from CPU samples, at least
    /// `ALLOC_ON_CPU_MIN_SAMPLES` of them, or any where no call was counted (see
    /// `net_allocator_time`): every view then shows that time as the allocator's, the figure the
    /// findings take their shares of (`allocator_ns`).
    pub alloc_on_cpu: bool,
    /// The report's five groups: malloc, calloc, realloc, free, aligned.
    pub groups: Vec<FnSummary>,
    /// Each of the ten functions separately.
    pub functions: Vec<FnSummary>,
    pub size_hist: Vec<u64>,
    pub locks: Vec<LockSummary>,
    /// Lock waits no hook timed (the C library's own locks, waits begun before an attach), from
    /// the thread states' samples: the rest of the threads' lock wait, one row per lock named.
    pub unhooked_locks: Vec<super::unhooked_locks::UnhookedLock>,
    /// Sampled allocation sites, symbolized (filled by `report`, which resolves symbols).
    pub alloc_sites: Vec<super::sites::SiteSummary>,
    pub stack_sampling: Option<crate::profile::StackSampling>,
    /// Frees of memory another thread allocated (glibc's allocator only; None when not measured).
    pub cross_frees: Option<CrossFreeSummary>,
    /// OpenMP parallel regions (libgomp's entry points), most barrier waiting first.
    pub omp_regions: Vec<OmpRegion>,
    /// Runs of parallel regions over time (the timeline's bands), in order of beginning.
    pub omp_runs: Vec<OmpRun>,
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

/// The saturating sum of counters from a file.
pub fn sum(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(0, u64::saturating_add)
}

fn cross_frees(p: &Profile) -> Option<CrossFreeSummary> {
    let sampled = sum(p.cross_frees.iter().map(|c| c.checked));
    let sampled_cross = sum(p.cross_frees.iter().map(|c| c.cross));
    if sampled == 0 || !p.process.allocator.contains("libc.so") {
        return None;
    }
    let frees = sum(p.threads.iter().map(|t| t.fns[FN_FREE].calls));
    let share = sampled_cross as f64 / sampled as f64;
    Some(CrossFreeSummary {
        sampled,
        sampled_cross,
        share,
        calls: (share * frees as f64).round() as u64,
    })
}

impl Summary {
    /// The profiled command as a shell would take it back (`--save ''` keeps its empty word),
    /// or the executable's path when the command line was not recorded.
    pub fn command_line(&self) -> String {
        if self.command.is_empty() {
            self.exe.clone()
        } else {
            shell_words::join(&self.command)
        }
    }
    /// Threads the profile speaks of, a folded group counting as its threads.
    pub fn thread_count(&self) -> u64 {
        self.threads
            .iter()
            .map(|t| t.folded.map_or(1, u64::from))
            .sum()
    }
    /// Threads that called the allocator, each thread of a folded group counted.
    pub fn allocating_thread_count(&self) -> u64 {
        self.threads.iter().map(|t| t.allocating).sum()
    }
    /// Calls of every allocator function, frees included.
    pub fn alloc_calls(&self) -> u64 {
        sum(self.groups.iter().map(|g| g.calls))
    }
    /// Calls that return memory (malloc, calloc, realloc, the aligned ones; not free).
    pub fn allocation_calls(&self) -> u64 {
        sum(self
            .groups
            .iter()
            .filter(|g| g.name != "free")
            .map(|g| g.calls))
    }
    pub fn requested_bytes(&self) -> u64 {
        sum(self.groups.iter().map(|g| g.bytes))
    }
    pub fn alloc_ns(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.alloc_ns))
    }
    pub fn thread_wall_ns(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.wall_ns))
    }
    pub fn cpu_ns(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.cpu_ns))
    }
    pub fn lock_wait_ns(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.lock_wait_ns))
    }
    /// A thread's time in the allocator as every view shows it: its time on a CPU inside the
    /// calls where CPU samples measured it, else the calls' timed length. One figure, because the
    /// two differ most where they matter: calls of a few nanoseconds are timed mostly by the
    /// clock's own reads (bignum_pell: 100% of its life timed inside calls that took 47-57% of its
    /// CPU time by samples and by perf), and calls on a loaded machine include the waits for a CPU.
    pub fn allocator_ns_of(&self, t: &ThreadSummary) -> u64 {
        t.allocator_ns(self.alloc_on_cpu)
    }
    /// `allocator_ns_of`, over all threads.
    pub fn allocator_ns(&self) -> u64 {
        self.allocator_ns_on(self.alloc_on_cpu)
    }
    /// `ThreadSummary::allocator_ns`, over all threads.
    pub fn allocator_ns_on(&self, on_cpu: bool) -> u64 {
        sum(self.threads.iter().map(|t| t.allocator_ns(on_cpu)))
    }
    /// Allocator time as a share of all threads' lifetimes (the report's `share_of_thread_time`).
    pub fn alloc_share_of_life(&self) -> f64 {
        ratio(self.alloc_ns(), self.thread_wall_ns())
    }
    /// Lock waits as a share of all threads' lifetimes.
    pub fn lock_wait_share_of_life(&self) -> f64 {
        ratio(self.lock_wait_ns(), self.thread_wall_ns())
    }
    /// The allocator's time on a CPU, over all threads.
    pub fn alloc_cpu_ns(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.alloc_cpu_ns))
    }
    /// The allocator's share of the threads' CPU time, at most 1 (each thread's allocator CPU
    /// time is at most its CPU time). CPU time, because on a loaded machine a share of wall
    /// time would understate it.
    pub fn alloc_share_of_cpu(&self) -> f64 {
        ratio(self.alloc_cpu_ns(), self.cpu_ns())
    }
    /// Where the views give the calls' timed length (`alloc_on_cpu` false) although some CPU
    /// samples saw the allocator run: their share of the threads' CPU time and how many samples
    /// there were, which the allocator findings take (with their uncertainty), so that the views
    /// show both figures side by side (quickstart, 19 samples: "4.0% of thread time inside"
    /// beside a finding of "10.7% of the threads' CPU time").
    pub fn alloc_sampled_aside(&self) -> Option<(f64, u64)> {
        let samples = self.alloc_cpu_samples();
        (!self.alloc_on_cpu && samples > 0 && self.alloc_cpu_ns() > 0)
            .then(|| (self.alloc_share_of_cpu(), samples))
    }
    /// The CPU samples the allocator's share of CPU time rests on (0: none, it comes from the
    /// calls' own timing).
    pub fn alloc_cpu_samples(&self) -> u64 {
        sum(self.threads.iter().map(|t| t.alloc_cpu_samples))
    }
    /// Lock waits as a share of the threads' busy-or-blocked time: waits / (CPU time + waits).
    pub fn lock_wait_share_of_busy(&self) -> f64 {
        let wait = self.lock_wait_ns();
        ratio(wait, self.cpu_ns().saturating_add(wait))
    }
    /// Allocation requests: the request-size histogram's total.
    pub fn requests(&self) -> u64 {
        sum(self.size_hist.iter().copied())
    }
    /// Share of allocation requests at or below `bytes`.
    pub fn size_share_at_most(&self, bytes: u64) -> f64 {
        ratio(self.requests_between(0, bytes), self.requests())
    }
    /// Requests of sizes within `[lo, hi]` (whole buckets only).
    pub fn requests_between(&self, lo: u64, hi: u64) -> u64 {
        sum(self
            .size_hist
            .iter()
            .enumerate()
            .filter(|(b, _)| {
                let (blo, bhi) = size_bucket_range(*b);
                blo >= lo && bhi <= hi
            })
            .map(|(_, c)| *c))
    }
    /// The function group of this name (malloc, calloc, realloc, free, aligned).
    pub fn group(&self, name: &str) -> Option<&FnSummary> {
        self.groups.iter().find(|g| g.name == name)
    }
}

/// `scales`: each thread's `alloc_time_scales` factor.
fn fn_summary(
    p: &Profile,
    scales: &[f64],
    name: &'static str,
    members: &[usize],
    group: Option<usize>,
) -> FnSummary {
    let (mut calls, mut bytes, mut timed_calls, mut ticks) = (0u64, 0u64, 0u64, 0.0f64);
    let mut raw_latency = [0u64; LAT_BUCKETS];
    for (t, scale) in p.threads.iter().zip(scales) {
        for &i in members {
            let f = &t.fns[i];
            calls = calls.saturating_add(f.calls);
            bytes = bytes.saturating_add(f.bytes);
            timed_calls = timed_calls.saturating_add(f.measured_calls());
            ticks += f.estimated_ticks() * scale;
        }
        if let Some(g) = group {
            for (acc, v) in raw_latency.iter_mut().zip(t.lat_hist[g].iter()) {
                *acc = acc.saturating_add(*v);
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
            // Estimates scaled from a sample of the calls can exceed the thread's life (a share
            // of 107% of it in the threads table): no thread spends more than its life anywhere.
            let wall_ns = t.life_ns(end);
            let alloc_ns = ((alloc_ticks * 1e9 / p.ticks_per_sec).round() as u64).min(wall_ns);
            ThreadSummary {
                serial: t.serial,
                tid: t.tid,
                name: t.name.clone(),
                main: t.flags & THREAD_MAIN != 0,
                cpu_ns: t.cpu_ns,
                wall_ns,
                alloc_ns,
                // Until the thread states say more (`net_allocator_time`).
                alloc_cpu_ns: alloc_ns.min(t.cpu_ns),
                alloc_cpu_samples: 0,
                alloc_calls: sum(t
                    .fns
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != FN_FREE)
                    .map(|(_, f)| f.calls)),
                lock_wait_ns: p.ticks_to_ns(t.lock_wait_ticks).min(wall_ns),
                folded: t.folded.map(|f| f.threads),
                allocating: match t.folded {
                    Some(f) => u64::from(f.allocating),
                    None => u64::from(t.fns.iter().any(|f| f.calls > 0)),
                },
                signal_blocked: t.flags & THREAD_SIGNAL_BLOCKED != 0,
            }
        })
        .collect();
    let scales = alloc_time_scales(p);
    let groups = GROUPS
        .iter()
        .enumerate()
        .map(|(g, (name, members))| fn_summary(p, &scales, name, members, Some(g)))
        .collect();
    let functions = FN_NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| fn_summary(p, &scales, name, &[i], None))
        .collect();
    let mut size_hist = vec![0u64; SIZE_BUCKETS];
    for t in &p.threads {
        for (acc, v) in size_hist.iter_mut().zip(t.size_hist.iter()) {
            *acc = acc.saturating_add(*v);
        }
    }
    let sandboxed = p.end.is_some_and(|e| e.how == EndHow::Sandbox);
    Summary {
        command: p.process.command.clone(),
        exe: p.process.exe.clone(),
        pid: p.process.pid,
        ppid: p.process.ppid,
        exit_code: p.exit_code(),
        signal: p.signal(),
        complete: p.complete,
        cut_at: p.cut_at,
        ended_by_exec: p.end.is_some_and(|e| e.how == EndHow::Exec),
        attach: p.attach.map(|a| AttachSummary {
            how: a.how.name(),
            window: a.window,
            window_ns: p.wall_ns(),
            process_ns: p.end_mono_ns().saturating_sub(a.process_start_mono_ns),
            detached: p.end.is_some_and(|e| e.how == EndHow::Detach),
        }),
        python: p.python.as_ref().map(|py| PythonSummary {
            version: py.version_text(),
            frames: py.frames(),
            note: py.why_no_frames(),
        }),
        sandbox: sandboxed.then(|| SandboxSummary {
            recorded_ns: p.wall_ns(),
            process_ns: p.supervisor.map(|s| s.wall_ns.max(p.wall_ns())),
        }),
        core_dumped: p.supervisor.is_some_and(|s| s.core_dumped),
        forked: p.process.forked,
        rwlock_steps: p.process.rwlock_steps,
        mutex_steps: p.process.mutex_steps,
        no_unwinder: p.process.no_unwinder,
        heap_unchecked: p.process.heap_unchecked,
        arenas_unread: p.process.arenas_unread,
        start_time_unix_ns: p.process.start_realtime_ns,
        flushes: p.flushes,
        // What the profile covers: a sandboxed process's life after its filter is not in it.
        wall_ns: match p.supervisor {
            Some(s) if !sandboxed => s.wall_ns.max(p.wall_ns()),
            _ => p.wall_ns(),
        },
        ncpus: p.process.ncpus,
        libc_version: p.process.libc_version.clone(),
        allocator: p.process.allocator.clone(),
        timing_exact: p.process.timing_exact,
        timing_period: p.process.timing_period,
        longer_timing_period: if p.process.timing_longer {
            p.process
                .timing_period
                .saturating_mul(crate::profile::format::TIMING_LONGER_FACTOR)
        } else {
            p.process.timing_period
        },
        lock_timing_period: p.process.lock_timing_period,
        threads,
        alloc_on_cpu: false,
        groups,
        functions,
        size_hist,
        alloc_sites: Vec::new(),
        stack_sampling: None,
        cross_frees: cross_frees(p),
        omp_regions: Vec::new(),
        omp_runs: Vec::new(),
        locks: merge_locks(p),
        unhooked_locks: Vec::new(),
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
                l.kind.name()
            };
            let hold = estimate(l.hold_ticks, l.timed_holds, l.acquisitions);
            let mut hold_ns = (hold * 1e9 / p.ticks_per_sec).round() as u64;
            let mut wait_ns = p.ticks_to_ns(l.wait_ticks);
            let mut max_wait_ns = p.ticks_to_ns(l.max_wait_ticks);
            if matches!(kind, "omp-region" | "omp-region-site") {
                // Short regions are timed on a sample, weighted (preload/omp.c): the barrier and
                // fork-join sums are scaled as the wall is, so that their shares of it stay those
                // of the sample; and the summed wall, an estimate, must not exceed the master's
                // life, as the real sum cannot.
                let mut scale = if l.timed_holds > 0 {
                    l.acquisitions as f64 / l.timed_holds as f64
                } else {
                    1.0
                };
                let end = if t.end_mono_ns > 0 {
                    t.end_mono_ns
                } else {
                    p.last_mono_ns
                };
                let life = end.saturating_sub(t.start_mono_ns);
                if t.folded.is_none() && life > 0 && hold_ns > life {
                    scale *= life as f64 / hold_ns as f64;
                    hold_ns = life;
                }
                wait_ns = (wait_ns as f64 * scale).round() as u64;
                max_wait_ns = (max_wait_ns as f64 * scale).round() as u64;
            }
            match locks
                .iter_mut()
                .find(|x| x.address == l.address && x.kind == kind)
            {
                Some(x) => {
                    x.acquisitions = x.acquisitions.saturating_add(l.acquisitions);
                    x.contended = x.contended.saturating_add(l.contended);
                    x.wait_ns = x.wait_ns.saturating_add(wait_ns);
                    // An OpenMP region's field is its fork-join cost, summed (preload/omp.c).
                    x.max_wait_ns = if matches!(kind, "omp-region" | "omp-region-site") {
                        x.max_wait_ns.saturating_add(max_wait_ns)
                    } else {
                        x.max_wait_ns.max(max_wait_ns)
                    };
                    x.hold_ns = x.hold_ns.saturating_add(hold_ns);
                    x.timed_holds = x.timed_holds.saturating_add(l.timed_holds);
                    x.threads += l.threads as usize;
                }
                None => locks.push(LockSummary {
                    address: l.address,
                    kind,
                    acquisitions: l.acquisitions,
                    contended: l.contended,
                    wait_ns,
                    max_wait_ns,
                    hold_ns,
                    timed_holds: l.timed_holds,
                    threads: l.threads as usize,
                    sites: Vec::new(),
                    holder_sites: Vec::new(),
                    runtime: None,
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

#[cfg(test)]
mod omp_region_tests {
    use super::{OmpRegion, merge_omp_regions};
    use crate::symbols::Frame;

    #[test]
    fn a_tbb_algorithm_is_named_by_its_template_and_the_users_frame() {
        let frame = |function: &str, module: &str, line: Option<u32>| Frame {
            function: Some(function.into()),
            file: line.map(|_| "/src/reduce.cpp".into()),
            line,
            module: module.into(),
            offset: 0x10,
            inlined: false,
        };
        let tbb = "/usr/lib/x86_64-linux-gnu/libtbb.so.12";
        let frames = vec![
            frame("tbb::detail::r1::itt_task_begin(int)", tbb, None),
            frame("tbb::detail::d1::execute_and_wait(int)", tbb, None),
            frame(
                "parallel_reduce<tbb::detail::d1::blocked_range<long int>, double>",
                "/bin/reduce",
                Some(40),
            ),
            frame("main", "/bin/reduce", Some(20)),
        ];
        let words = super::tbb_algorithm_words(&frames);
        assert!(words.starts_with("tbb::parallel_reduce in "), "{words}");
        assert_eq!(super::tbb_algorithm_words(&[]), "a TBB algorithm");
    }

    fn region(function: &str, line: u32, address: u64, call_site: bool) -> OmpRegion {
        OmpRegion {
            address,
            call_site,
            frame: Some(Frame {
                function: Some(function.into()),
                file: Some("/src/x.c".into()),
                line: Some(line),
                module: "/bin/x".into(),
                offset: address,
                inlined: false,
            }),
            merged: Vec::new(),
            runs: 1,
            members: 2,
            wall_ns: 100,
            barrier_ns: 40,
            fork_join_ns: 5,
        }
    }

    #[test]
    fn regions_are_named_by_the_function_that_holds_the_pragma() {
        let words = |f: &str| region(f, 13, 1, true).words();
        assert_eq!(
            words("main._omp_fn.0"),
            "the parallel region in main at x.c:13"
        );
        assert_eq!(words("main"), "the parallel region in main at x.c:13");
        assert_eq!(
            words(".omp_outlined._debug__"),
            "the parallel region in an outer parallel region at x.c:13"
        );
        assert_eq!(
            words("main.omp_outlined_debug__"),
            "the parallel region in main at x.c:13"
        );
    }

    #[test]
    fn call_sites_of_one_pragma_are_one_region() {
        let mut regions = vec![
            region("step", 16, 0x30, true),
            region("step", 16, 0x10, true),
            region("step", 20, 0x20, true),
            region("step", 16, 0x40, false),
        ];
        merge_omp_regions(&mut regions);
        assert_eq!(regions.len(), 3);
        let one = &regions[0];
        assert_eq!((one.address, one.runs, one.members), (0x10, 2, 4));
        assert_eq!(
            (one.wall_ns, one.barrier_ns, one.fork_join_ns),
            (200, 80, 10)
        );
        assert_eq!(regions[1].runs, 1);
    }
}

#[cfg(test)]
mod alloc_time_scale_tests {
    use super::{FN_FREE, FN_MALLOC, alloc_time_scale_by_function, summarize};
    use crate::profile::{Profile, ThreadStats};

    /// Calls timed longer in all than the thread lived (calls of a few nanoseconds, timed mostly
    /// by the clock) are capped at its life in the threads table, and the functions' times and
    /// their sites' are scaled by the same factor: the tables add up to the same time.
    #[test]
    fn estimates_above_a_threads_life_are_scaled_alike_in_every_table() {
        let mut p = Profile {
            ticks_per_sec: 1e9,
            ..Default::default()
        };
        let mut long = ThreadStats::quiet(1, 10, "long", 0, 1_000);
        long.fns[FN_MALLOC].calls = 100;
        long.fns[FN_MALLOC].timed_calls = 10;
        long.fns[FN_MALLOC].timed_ticks = 150; // 1,500 ns estimated
        long.fns[FN_FREE].calls = 100;
        long.fns[FN_FREE].timed_calls = 10;
        long.fns[FN_FREE].timed_ticks = 50; // 500 ns
        let mut short = ThreadStats::quiet(2, 11, "short", 0, 1_000);
        short.fns[FN_MALLOC].calls = 10;
        short.fns[FN_MALLOC].timed_calls = 10;
        short.fns[FN_MALLOC].timed_ticks = 100; // 100 ns, within its life
        p.threads = vec![long, short];
        let s = summarize(&p);
        assert_eq!(
            s.threads.iter().map(|t| t.alloc_ns).collect::<Vec<_>>(),
            vec![1_000, 100]
        );
        let by_name = |n: &str| s.groups.iter().find(|g| g.name == n).unwrap().time_ns;
        // The long thread's 2,000 ns halved: malloc 750 + 100, free 250.
        assert_eq!((by_name("malloc"), by_name("free")), (850, 250));
        assert_eq!(by_name("malloc") + by_name("free"), s.alloc_ns());
        let scale = alloc_time_scale_by_function(&p);
        assert!(
            (scale[FN_MALLOC] - 850.0 / 1_600.0).abs() < 1e-12,
            "{scale:?}"
        );
        assert!((scale[FN_FREE] - 0.5).abs() < 1e-12, "{scale:?}");
    }
}
