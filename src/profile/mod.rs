//! Profiles: the data model, and the reader that validates a file into it.

pub mod format;
pub mod phases;
pub mod python;
mod reader;
pub mod samples;
pub mod title;
pub mod tree;

pub use reader::{ProfileError, fix_checksums, parse, read, record_crc};

use format::*;

/// What the process was and how it ran.
#[derive(Debug, Clone, Default)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    pub start_realtime_ns: u64,
    pub start_mono_ns: u64,
    pub start_ticks: u64,
    pub ticks_per_sec: u64,
    pub ncpus: u32,
    pub timing_exact: bool,
    pub timing_period: u32,
    /// Lock holds were timed one acquisition in this many (`timing_period` in files written
    /// before holds had a period of their own).
    pub lock_timing_period: u32,
    pub forked: bool,
    /// Uncontended rwlock read locks and releases were done by the interposer (glibc's own
    /// step on the lock word), not forwarded to glibc.
    pub rwlock_steps: bool,
    /// The same for normal mutexes' locks and releases.
    pub mutex_steps: bool,
    /// Stacks were asked for, but the interposer could load no unwinder (libgcc_s.so.1): the
    /// profile has none.
    pub no_unwinder: bool,
    /// glibc's chunk size words did not read as expected at start: allocator calls were treated
    /// as another allocator's (no size word read; large calls always timed).
    pub heap_unchecked: bool,
    /// Heaps of huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb): cross-thread frees not measured.
    pub arenas_unread: bool,
    /// Allocation requests below STACK_BYTES_FROM bytes were sampled for stacks by count alone.
    pub small_by_count: bool,
    /// A thread's sampling period of an allocator function lengthened 16-fold once the thread had
    /// timed enough of its calls (PROCESS flag TIMING_LONGER): its later timed calls are weighted.
    pub timing_longer: bool,
    /// The profile holds a window of a running process (`stallscope attach`; see `Profile::attach`).
    pub attached: bool,
    pub libc_version: String,
    pub allocator: String,
    pub command: Vec<String>,
    pub exe: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FnStats {
    pub calls: u64,
    pub bytes: u64,
    pub timed_calls: u64,
    pub timed_ticks: u64,
    pub exact_calls: u64,
    pub exact_ticks: u64,
}

impl FnStats {
    /// Estimated total duration in ticks: the always-timed calls as measured, plus the sampled
    /// calls scaled to all the other calls (unbiased, since the sample is random).
    pub fn estimated_ticks(&self) -> f64 {
        let sampled = if self.timed_calls == 0 {
            0.0
        } else {
            self.timed_ticks as f64 * self.calls.saturating_sub(self.exact_calls) as f64
                / self.timed_calls as f64
        };
        self.exact_ticks as f64 + sampled
    }

    /// Calls whose duration was measured, in either stratum (the reader checks that this does
    /// not overflow and is at most `calls`).
    pub fn measured_calls(&self) -> u64 {
        self.timed_calls.saturating_add(self.exact_calls)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockStats {
    pub address: u64,
    pub kind: LockKind,
    /// How many threads took it: 1 for a thread's own record, the count for a folded group.
    pub threads: u32,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ticks: u64,
    pub max_wait_ticks: u64,
    pub timed_holds: u64,
    pub hold_ticks: u64,
}

#[derive(Debug, Clone)]
pub struct ThreadStats {
    pub serial: u32,
    pub tid: u32,
    pub flags: u32,
    pub name: String,
    pub start_mono_ns: u64,
    pub end_mono_ns: u64,
    pub cpu_ns: u64,
    pub lock_wait_ticks: u64,
    pub fns: [FnStats; FN_COUNT],
    pub size_hist: [u64; SIZE_BUCKETS],
    pub lat_hist: [[u64; LAT_BUCKETS]; GROUP_COUNT],
    pub locks: Vec<LockStats>,
    /// A group of short threads summed into one record (`None`: one thread).
    pub folded: Option<Folded>,
}

/// Threads that ended before any flush wrote them, beyond the budget of those written on their
/// own, summed per name: their counters are the record's, their samples carry its serial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Folded {
    pub threads: u32,
    /// How many of them called the allocator (0 in profiles written before the count).
    pub allocating: u32,
    /// Their lives, summed.
    pub life_ns: u64,
}

#[cfg(test)]
impl ThreadStats {
    /// A thread that lived from `start_mono_ns` to `end_mono_ns` and counted nothing: the unit
    /// tests' fixture, which each test adjusts (flags, CPU time, folding).
    pub fn quiet(
        serial: u32,
        tid: u32,
        name: &str,
        start_mono_ns: u64,
        end_mono_ns: u64,
    ) -> ThreadStats {
        ThreadStats {
            serial,
            tid,
            flags: 0,
            name: name.to_string(),
            start_mono_ns,
            end_mono_ns,
            cpu_ns: 0,
            lock_wait_ticks: 0,
            fns: Default::default(),
            size_hist: [0; format::SIZE_BUCKETS],
            lat_hist: [[0; format::LAT_BUCKETS]; format::GROUP_COUNT],
            locks: Vec::new(),
            folded: None,
        }
    }
}

impl ThreadStats {
    /// The thread's life (for a folded group: its threads' lives summed), ending at `end_ns`.
    pub fn life_ns(&self, end_ns: u64) -> u64 {
        match self.folded {
            Some(f) => f.life_ns,
            None => end_ns.saturating_sub(self.start_mono_ns),
        }
    }
}

/// A thread's sampled frees whose chunk the arena check placed, and those that belonged to
/// another arena than the thread's own (glibc's allocator only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrossFrees {
    pub serial: u32,
    pub checked: u64,
    pub cross: u64,
}

#[derive(Debug, Clone, Copy)]
pub struct EndInfo {
    pub how: EndHow,
    pub status: i32,
    pub mono_ns: u64,
}

/// The window of a running process a profile holds (`stallscope attach`): PROCESS's start is the
/// window's; what happened before it (allocations, locks held, waits begun) is not in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachInfo {
    pub how: AttachHow,
    /// When the process (this image) began, before the window.
    pub process_start_mono_ns: u64,
    pub window_start_mono_ns: u64,
    /// 1 for the process's first window, 2 for the next, ...
    pub window: u32,
}

#[derive(Debug, Clone, Copy)]
pub struct SupervisorInfo {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub core_dumped: bool,
    pub wall_ns: u64,
}

/// An object loaded in the process: addresses in `[lo, hi)` are `bias` + its file's addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub bias: u64,
    pub lo: u64,
    pub hi: u64,
    pub seen_mono_ns: u64,
    pub build_id: Vec<u8>,
    pub path: String,
    /// When it was found unloaded, if it was.
    pub gone_mono_ns: Option<u64>,
}

/// A call stack: return addresses, innermost first, and when it was first taken; in a process
/// that ran CPython, the Python frames the thread ran then, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    pub pcs: Vec<u64>,
    pub first_mono_ns: u64,
    pub python: Vec<python::PyFrame>,
}

/// Sampled statistics of one allocation site (a call stack and an allocator function).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocSite {
    pub stack: u32,
    pub function: usize,
    pub samples: u64,
    pub sampled_bytes: u64,
    /// Estimated calls, in units of 2^-16.
    pub weight_q16: u64,
    pub est_bytes: u64,
    pub est_ticks: u64,
}

/// Sampled stacks of one lock: of threads that waited for it, or that released it while others
/// waited (rate-limited per thread, so counts are of samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockSite {
    pub address: u64,
    pub kind: LockKind,
    pub role: LockRole,
    pub stack: u32,
    pub events: u64,
    pub wait_ticks: u64,
}

/// How allocation stacks were sampled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct StackSampling {
    /// One call in `count_period` (0: off).
    pub count_period: u32,
    /// Mean bytes between byte-sampled calls (0: off).
    pub mean_bytes: u64,
    /// Samples lost because the interposer's stack table was full.
    pub dropped: u64,
    /// The smallest request in the byte sample: smaller ones were taken by count alone (0:
    /// every request was in both; PROCESS flag SMALL_BY_COUNT).
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_from: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default)]
pub struct Profile {
    pub process: ProcessInfo,
    /// The last record of each thread, in order of appearance.
    pub threads: Vec<ThreadStats>,
    pub end: Option<EndInfo>,
    pub supervisor: Option<SupervisorInfo>,
    /// The profile holds a window of a process that ran before it (None: the whole process).
    pub attach: Option<AttachInfo>,
    /// The process image ended cleanly (an END record is the last thing it wrote).
    pub complete: bool,
    /// The file was cut at this byte (inside a batch): what follows its last whole batch is not read.
    pub cut_at: Option<u64>,
    /// The latest monotonic time the file speaks of.
    pub last_mono_ns: u64,
    /// Ticks per second, refined from the longest (ticks, time) baseline in the file.
    pub ticks_per_sec: f64,
    pub flushes: u64,
    /// Loaded objects, in order of appearance (an unloaded object stays).
    pub modules: Vec<Module>,
    /// Call stacks by id.
    pub stacks: std::collections::HashMap<u32, Stack>,
    /// The title the process gave itself, its words (`postgres: checkpointer`); empty where it
    /// kept the command line it started with (`process.command`).
    pub title: Vec<String>,
    /// The CPython interpreter the process ran, and its code objects (None: none found).
    pub python: Option<python::Python>,
    /// The last record of allocation sites.
    pub alloc_sites: Vec<AllocSite>,
    pub stack_sampling: Option<StackSampling>,
    /// The last record of lock sites.
    pub lock_sites: Vec<LockSite>,
    /// Phases that ended, in the order they ended.
    pub phases: Vec<phases::PhaseRecord>,
    /// Heap snapshots, in the order they were taken.
    pub heap_snapshots: Vec<phases::HeapSnapshot>,
    /// Per thread (by serial): sampled frees placed in an arena, and those in another thread's.
    pub cross_frees: Vec<CrossFrees>,
    /// How thread-state sampling ran (None: a profile without it).
    pub sampling: Option<samples::SamplingInfo>,
    /// Thread-state samples of all threads, in file order.
    pub samples: Vec<samples::Sample>,
    /// Blocking waits of all threads with their wait-for edges, in file order.
    pub waits: Vec<samples::Wait>,
    /// Runs of OpenMP parallel regions, by the thread that started them (the timeline's bands).
    pub region_runs: Vec<samples::RegionRun>,
    /// Waits lost to a full buffer.
    pub waits_dropped: u64,
    /// The kernel's figures per thread and look (run-queue delay, faults), in file order.
    pub sched: Vec<samples::SchedPoint>,
}

impl Profile {
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        (ticks as f64 * 1e9 / self.ticks_per_sec).round() as u64
    }

    /// When the process image ended (or its last flush).
    pub fn end_mono_ns(&self) -> u64 {
        self.end.map_or(self.last_mono_ns, |e| e.mono_ns)
    }

    /// When a thread ended: its own end, or the process's for a thread still running then.
    pub fn thread_end_ns(&self, t: &ThreadStats) -> u64 {
        if t.end_mono_ns != 0 {
            t.end_mono_ns
        } else {
            self.end_mono_ns()
        }
    }

    /// Wall time of the process image, from its start to its end (or last flush).
    pub fn wall_ns(&self) -> u64 {
        self.end_mono_ns()
            .saturating_sub(self.process.start_mono_ns)
    }

    /// How the process ended: its exit code, or the signal that killed it.
    pub fn exit_code(&self) -> Option<i32> {
        if let Some(s) = self.supervisor {
            return s.exit_code;
        }
        match self.end {
            Some(e) if matches!(e.how, EndHow::Exit | EndHow::UnderscoreExit) => Some(e.status),
            _ => None,
        }
    }

    pub fn signal(&self) -> Option<i32> {
        self.supervisor.and_then(|s| s.signal)
    }
}

#[cfg(test)]
mod reader_tests;
