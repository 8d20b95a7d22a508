//! The model as JSON (schema `stallscope.report/1`, documented in docs/STATES.md, docs/STACKS.md
//! and docs/FINDINGS.md), as `report --json` and `export -f json` print it: a serialization of the
//! typed structs below, built from the model.
//! The keys are a contract: add keys freely, never rename or remove one. Field order is key order.

use crate::analysis::Analysis;
use crate::analysis::phases::{PhaseFlag, PhaseFn, PhaseSummary};
use crate::analysis::sites::{LockSiteSummary, SiteSummary};
use crate::analysis::states::{
    CATEGORIES, HotFunction, SITE_CATEGORIES, StateReport, StateSite, ThreadStates, sampling_note,
    signal_name,
};
use crate::analysis::summary::{FnSummary, LockSummary, ThreadSummary};
use crate::analysis::threads::ThreadId;
use crate::findings::Finding;
use crate::model::Model;
use crate::profile::StackSampling;
use crate::profile::format::size_bucket_range;
use crate::profile::phases::{FreeBin, HeapSnapshot};
use crate::profile::samples::SamplingInfo;
use crate::symbols::Frame;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

mod alloc;
mod concurrency;
mod efficiency;
mod frames;
mod locks;
mod omp;
mod phases;
mod sampling;
mod threads;
use alloc::*;
use concurrency::*;
use efficiency::*;
use frames::*;
use locks::*;
use omp::*;
use phases::*;
use sampling::*;
use threads::*;

/// The report of one profile.
#[derive(Serialize)]
pub struct Report<'a> {
    schema: &'static str,
    path: &'a str,
    command: &'a [String],
    exe: &'a str,
    pid: u32,
    ppid: u32,
    exit_code: Option<i32>,
    signal: Option<i32>,
    complete: bool,
    ended_by_exec: bool,
    /// The window of a running process the profile holds (`stallscope attach`); absent for a
    /// profile of a whole process.
    #[serde(skip_serializing_if = "Option::is_none")]
    attach: Option<crate::analysis::summary::AttachSummary>,
    /// The process installed a seccomp filter, where recording ended (the profile's wall time is
    /// up to there); absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<crate::analysis::summary::SandboxSummary>,
    /// The CPython interpreter the process ran: its version and whether its stacks show the
    /// Python frames (a note says why not); absent when it ran none.
    #[serde(skip_serializing_if = "Option::is_none")]
    python: Option<crate::analysis::summary::PythonSummary>,
    core_dumped: bool,
    forked: bool,
    start_time_unix_ns: u64,
    flushes: u64,
    cpu_ns: u64,
    wall_ns: u64,
    ncpus: u32,
    libc_version: &'a str,
    allocator: &'a str,
    timing: Timing,
    /// Which uncontended lock calls the interposer did itself, with glibc's own step on the lock
    /// word (docs/PERFORMANCE.md), instead of forwarding them to glibc.
    lock_steps: LockSteps,
    /// Stacks were asked for, but the interposer could load no unwinder (libgcc_s.so.1): the
    /// profile has no stacks, so no site, lock or state is named by its code.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    no_unwinder: bool,
    /// glibc's chunk size words did not read as expected at start (preload/glibc_check.c).
    heap_unchecked: bool,
    /// Heaps of huge pages: cross-thread frees not measured.
    arenas_unread: bool,
    /// Which package or setting would name glibc's locks and functions still unnamed (libc's
    /// debug file missing); absent when nothing is.
    #[serde(skip_serializing_if = "Option::is_none")]
    names_hint: Option<String>,
    /// Every thread that ran, each thread of a folded group counted (`threads` lists rows).
    thread_count: u64,
    threads: Vec<Thread<'a>>,
    alloc: Alloc<'a>,
    locks: Vec<Lock<'a>>,
    /// Lock waits no hook timed (locks inside libraries, waits begun before an attach), from
    /// the thread states' samples: with `locks`, every lock wait the threads' figures count.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unhooked_locks: Vec<UnhookedLockJson>,
    /// OpenMP parallel regions (libgomp's entry points); absent without any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    omp_regions: Vec<OmpRegionJson>,
    /// Runs of parallel regions over time (the timeline's bands); absent without any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    omp_runs: Vec<OmpRunJson>,
    phases: Vec<Phase<'a>>,
    heap_snapshots: Vec<Heap<'a>>,
    phase_flags: &'a [PhaseFlag],
    sampling: Sampling,
    #[serde(skip_serializing_if = "Option::is_none")]
    hot: Option<Vec<Hot<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<Timeline<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_efficiency: Option<Efficiency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    working_efficiency: Option<WorkingEfficiencyJson>,
    /// Who waited for whom, on what (docs/WAITFOR.md); absent when the profile recorded no wait.
    #[serde(skip_serializing_if = "Option::is_none")]
    wait_for: Option<super::waitfor_json::WaitForJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<ConcurrencyJson>,
    /// Waiting for work charged to the work that ran meanwhile.
    #[serde(skip_serializing_if = "Option::is_none")]
    blame: Option<super::blame_json::BlameJson>,
    findings: &'a [Finding],
}

pub const SCHEMA: &str = "stallscope.report/1";

/// The JSON text of one report (or, for several, an array of them), as `report --json` prints it.
pub fn to_string(analyses: &[Model]) -> serde_json::Result<String> {
    let reports: Vec<Report> = analyses.iter().map(report).collect();
    match reports.as_slice() {
        [one] => serde_json::to_string_pretty(one),
        many => serde_json::to_string_pretty(many),
    }
}

pub fn report(a: &Model) -> Report<'_> {
    let s = &a.summary;
    let states = a.states.as_ref();
    let start = a.profile.process.start_mono_ns;
    Report {
        schema: SCHEMA,
        path: &a.path,
        command: &s.command,
        exe: &s.exe,
        pid: s.pid,
        ppid: s.ppid,
        exit_code: s.exit_code,
        signal: s.signal,
        complete: s.complete,
        ended_by_exec: s.ended_by_exec,
        attach: s.attach,
        sandbox: s.sandbox,
        python: s.python.clone(),
        core_dumped: s.core_dumped,
        forked: s.forked,
        start_time_unix_ns: s.start_time_unix_ns,
        flushes: s.flushes,
        cpu_ns: s.cpu_ns(),
        wall_ns: s.wall_ns,
        ncpus: s.ncpus,
        libc_version: &s.libc_version,
        allocator: &s.allocator,
        timing: Timing {
            mode: if s.timing_exact { "exact" } else { "sampled" },
            period: s.timing_period,
            longer_period: s.longer_timing_period,
            lock_period: s.lock_timing_period,
        },
        lock_steps: LockSteps {
            mutex: s.mutex_steps,
            rwlock_read: s.rwlock_steps,
        },
        no_unwinder: s.no_unwinder,
        heap_unchecked: s.heap_unchecked,
        arenas_unread: s.arenas_unread,
        names_hint: crate::analysis::locknames::missing_names_hint(states, &a.profile.modules),
        thread_count: s.thread_count(),
        threads: s
            .threads
            .iter()
            .map(|t| Thread::of(t, a.states_of(t.serial)))
            .collect(),
        alloc: Alloc {
            total_calls: s.alloc_calls(),
            threads: s.allocating_thread_count(),
            time_ns: s.alloc_ns(),
            share_of_thread_time: s.alloc_share_of_life(),
            cpu_ns: s.alloc_cpu_ns(),
            share_of_cpu: s.alloc_share_of_cpu(),
            cpu_samples: s.alloc_cpu_samples(),
            time_on_cpu: s.alloc_on_cpu,
            functions: Named(s.groups.iter().map(|g| (g.name, Function::of(g))).collect()),
            by_function: Named(
                s.functions
                    .iter()
                    .map(|f| (f.name, Function::of(f)))
                    .collect(),
            ),
            size_histogram: s
                .size_hist
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(b, &count)| {
                    let (min_bytes, max_bytes) = size_bucket_range(b);
                    SizeBucket {
                        min_bytes,
                        max_bytes,
                        count,
                    }
                })
                .collect(),
            latency_histogram: Named(
                s.groups
                    .iter()
                    .map(|g| {
                        let buckets = g
                            .latency
                            .iter()
                            .map(|&(min_ns, max_ns, count)| LatencyBucket {
                                min_ns,
                                max_ns,
                                count,
                            })
                            .collect();
                        (g.name, buckets)
                    })
                    .collect(),
            ),
            sites: s.alloc_sites.iter().map(AllocSite::of).collect(),
            stack_sampling: s.stack_sampling.as_ref(),
            cross_thread_frees: s.cross_frees.map(|c| CrossFrees {
                calls: c.calls,
                share: c.share,
                sampled_frees: c.sampled,
                sampled_cross: c.sampled_cross,
            }),
        },
        locks: s.locks.iter().map(Lock::of).collect(),
        unhooked_locks: s
            .unhooked_locks
            .iter()
            .map(|l| UnhookedLockJson {
                name: l.name.clone(),
                address: (l.address != 0).then(|| format!("{:#x}", l.address)),
                wait_ns: l.wait_ns,
                samples: l.samples,
                threads: l.threads,
                user_frame: l.user_frame().map(|f| f.display()),
            })
            .collect(),
        omp_regions: s
            .omp_regions
            .iter()
            .map(|r| OmpRegionJson {
                region: r.words(),
                address: format!("{:#x}", r.address),
                runs: r.runs,
                team: r.team(),
                wall_ns: r.wall_ns,
                barrier_ns: r.barrier_ns,
                barrier_share: r.barrier_share(),
                fork_join_ns: r.fork_join_ns,
            })
            .collect(),
        omp_runs: s
            .omp_runs
            .iter()
            .map(|r| OmpRunJson {
                tid: r.tid,
                begin_ns: r.begin_ns,
                end_ns: r.end_ns,
                region: r.words(&s.omp_regions),
                runtime: if r.tbb { "TBB" } else { "OpenMP" },
                regions: r.regions,
                barrier_share: r.barrier_share,
            })
            .collect(),
        phases: a
            .phases
            .phases
            .iter()
            .map(|p| Phase::of(p, start))
            .collect(),
        heap_snapshots: a
            .phases
            .snapshots
            .iter()
            .map(|h| Heap::of(h, start))
            .collect(),
        phase_flags: &a.phases.flags,
        sampling: Sampling::of(a.sampling()),
        hot: states.map(|r| r.hot.iter().map(Hot::of).collect()),
        timeline: states.map(Timeline::of),
        parallel_efficiency: states.map(|r| Efficiency {
            compute_ns: r.compute_ns(),
            wall_ns: r.wall_ns,
            threads: r.peak_threads,
            cpus: r.cpus,
            value: r.parallel_efficiency(),
        }),
        working_efficiency: a.efficiency.as_ref().map(WorkingEfficiencyJson::of),
        wait_for: super::waitfor_json::WaitForJson::of(a),
        concurrency: concurrency_json(a),
        blame: super::blame_json::BlameJson::of(a),
        findings: &a.findings,
    }
}

/// Named entries serialized as a JSON object, in order.
pub struct Named<T>(pub Vec<(&'static str, T)>);

impl<T: Serialize> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Timing {
    mode: &'static str,
    period: u32,
    /// An allocator function's period in a thread once the thread has timed enough of its calls
    /// (`period` where it never lengthens).
    longer_period: u32,
    /// Lock holds: one acquisition in `lock_period` timed.
    lock_period: u32,
}

#[derive(Serialize)]
struct LockSteps {
    /// Normal mutexes' locks and releases.
    mutex: bool,
    /// Read-write locks' read locks and their releases.
    rwlock_read: bool,
}
