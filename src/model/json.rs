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

/// `concurrency`: from the kernel's per-thread figures (docs/STATES.md).
#[derive(Serialize)]
struct ConcurrencyJson {
    cpus: u32,
    bin_ns: u64,
    verdict: &'static str,
    offered: UtilizationJson,
    achieved: UtilizationJson,
    over_ns: u64,
    own_runnable_ns: u64,
    other_runnable_ns: u64,
    peak_wanting: f64,
    parallel_ns: u64,
    serial_sections: Vec<SerialJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    imbalance: Option<ImbalanceJson>,
}

#[derive(Serialize)]
struct UtilizationJson {
    idle: f64,
    poor: f64,
    ok: f64,
    ideal: f64,
    over: f64,
    mean: f64,
}

impl UtilizationJson {
    fn of(u: &crate::analysis::concurrency::Utilization) -> UtilizationJson {
        let r = |v: f64| (v * 1e4).round() / 1e4;
        UtilizationJson {
            idle: r(u.idle),
            poor: r(u.poor),
            ok: r(u.ok),
            ideal: r(u.ideal),
            over: r(u.over),
            mean: r(u.mean),
        }
    }
}

#[derive(Serialize)]
struct SerialJson {
    begin_ns: u64,
    end_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_frame: Option<String>,
}

#[derive(Serialize)]
struct ImbalanceJson {
    tids: Vec<u32>,
    start_ns: u64,
    ideal_end_ns: u64,
    finish_ns: Vec<u64>,
    last_end_ns: u64,
    lagging_tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    user_frame: Option<String>,
    idle_ns: u64,
    lagging_exec_ns: u64,
    others_exec_ns: u64,
}

fn concurrency_json(a: &Analysis) -> Option<ConcurrencyJson> {
    let c = a.concurrency.as_ref()?;
    let tid = |i: usize| a.profile.threads.get(i).map_or(0, |t| t.tid);
    Some(ConcurrencyJson {
        cpus: c.cpus,
        bin_ns: c.bin_ns,
        verdict: c.offered.verdict(),
        offered: UtilizationJson::of(&c.offered),
        achieved: UtilizationJson::of(&c.achieved),
        over_ns: c.over_ns,
        own_runnable_ns: c.own_runnable_ns,
        other_runnable_ns: c.other_runnable_ns,
        peak_wanting: (c.peak_wanting * 100.0).round() / 100.0,
        parallel_ns: c.parallel_ns,
        serial_sections: c
            .serial
            .iter()
            .map(|s| SerialJson {
                begin_ns: s.begin_ns,
                end_ns: s.end_ns,
                tid: s.thread.map(tid),
                user_frame: s.user_frame.as_ref().map(|f| f.display()),
            })
            .collect(),
        imbalance: c.imbalance.as_ref().map(|im| ImbalanceJson {
            tids: im.members.iter().map(|&i| tid(i)).collect(),
            start_ns: im.start_ns,
            ideal_end_ns: im.ideal_end_ns,
            finish_ns: im.finish_ns.clone(),
            last_end_ns: im.last_end_ns,
            lagging_tid: tid(im.lagging),
            user_frame: im.user_frame.as_ref().map(|f| f.display()),
            idle_ns: im.idle_ns,
            lagging_exec_ns: im.lagging_exec_ns,
            others_exec_ns: im.others_exec_ns,
        }),
    })
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

#[derive(Serialize)]
struct Thread<'a> {
    tid: u32,
    name: &'a str,
    /// Its label, as every view prints it (`ThreadId::label`).
    label: String,
    main: bool,
    cpu_ns: u64,
    wall_ns: u64,
    /// The allocator calls' summed durations (waits for a CPU or a lock inside them included).
    alloc_ns: u64,
    /// The allocator's time on a CPU (at most `cpu_ns`): what its share of CPU time is taken of.
    alloc_cpu_ns: u64,
    alloc_calls: u64,
    lock_wait_ns: u64,
    /// How many short threads this row stands for, when they were folded into one group.
    #[serde(skip_serializing_if = "Option::is_none")]
    folded_threads: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    states: Option<States>,
    /// How the thread's states were sampled: "signal" (its CPU timer's signal) or "kernel-clock"
    /// (it blocked the signal: its running time read from its kernel CPU clock, unclassified).
    #[serde(skip_serializing_if = "Option::is_none")]
    sampling: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_sites: Option<Named<Vec<StateSiteJson<'a>>>>,
    /// The kernel's figures for the thread (schedstat, stat), when the profile has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<KernelJson>,
}

#[derive(Serialize)]
struct KernelJson {
    exec_ns: u64,
    run_delay_ns: u64,
    off_ns: u64,
    minflt: u64,
    majflt: u64,
    stime_ns: u64,
    switches: u64,
}

impl<'a> Thread<'a> {
    fn of(t: &'a ThreadSummary, states: Option<&'a ThreadStates>) -> Thread<'a> {
        Thread {
            tid: t.tid,
            name: &t.name,
            label: ThreadId::of_summary(t).label(),
            main: t.main,
            cpu_ns: t.cpu_ns,
            wall_ns: t.wall_ns,
            alloc_ns: t.alloc_ns,
            alloc_cpu_ns: t.alloc_cpu_ns,
            alloc_calls: t.alloc_calls,
            lock_wait_ns: t.lock_wait_ns,
            folded_threads: t.folded,
            states: states.map(States::of),
            sampling: states.map(|st| {
                if st.signal_blocked {
                    "kernel-clock"
                } else {
                    "signal"
                }
            }),
            state_sites: states.map(|st| {
                Named(
                    SITE_CATEGORIES
                        .iter()
                        .map(|&c| {
                            let list = st
                                .listed_sites(c)
                                .map(|site| StateSiteJson::of(st, site))
                                .collect();
                            (c.key(), list)
                        })
                        .collect(),
                )
            }),
            kernel: states.and_then(|st| st.kernel).map(|k| KernelJson {
                exec_ns: k.exec_ns,
                run_delay_ns: k.run_delay_ns,
                off_ns: k.off_ns,
                minflt: k.minflt,
                majflt: k.majflt,
                stime_ns: k.stime_ns,
                switches: k.switches,
            }),
        }
    }
}

/// `threads[].states`: time per category (`<category>_ns`), the allocator's part from CPU samples
/// (`cpu_samples.allocator_ns`: on a CPU), what no sample stands for, samples.
struct States {
    ns: Vec<(String, u64)>,
    allocator_on_cpu_ns: u64,
    unaccounted_ns: u64,
    samples: u64,
}

impl States {
    fn of(t: &ThreadStates) -> States {
        States {
            ns: CATEGORIES
                .iter()
                .map(|c| (format!("{}_ns", c.key()), t.ns[c.index()]))
                .collect(),
            allocator_on_cpu_ns: t.allocator_on_cpu_ns,
            unaccounted_ns: t.unaccounted_ns(),
            samples: t.samples,
        }
    }
}

impl Serialize for States {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.ns.len() + 3))?;
        for (k, v) in &self.ns {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry(
            "cpu_samples",
            &std::collections::BTreeMap::from([("allocator_ns", self.allocator_on_cpu_ns)]),
        )?;
        map.serialize_entry("unaccounted_ns", &self.unaccounted_ns)?;
        map.serialize_entry("samples", &self.samples)?;
        map.end()
    }
}

#[derive(Serialize)]
struct StateSiteJson<'a> {
    share: f64,
    samples: u64,
    ns: u64,
    function: String,
    user_frame: Option<String>,
    frames: Frames<'a>,
    /// Lock waits: the locks named by the futex words the samples caught, most first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locks: Vec<WaitedLockJson<'a>>,
}

#[derive(Serialize)]
struct WaitedLockJson<'a> {
    name: &'a str,
    /// `symbol`, `allocator`, `stdio`, `init-site` or `address`.
    named_by: &'a str,
    address: String,
    samples: u64,
    ns: u64,
}

impl<'a> StateSiteJson<'a> {
    fn of(t: &ThreadStates, site: &'a StateSite) -> StateSiteJson<'a> {
        StateSiteJson {
            share: t.site_share(site),
            samples: site.samples,
            ns: site.ns,
            function: site.function(),
            user_frame: site.user_frame().map(Frame::display),
            frames: Frames(&site.frames),
            locks: site
                .locks
                .iter()
                .map(|l| WaitedLockJson {
                    name: &l.name,
                    named_by: l.how,
                    address: format!("{:#x}", l.object),
                    samples: l.samples,
                    ns: l.ns,
                })
                .collect(),
        }
    }
}

/// A frame list: each frame `{function, file, line, module, offset ("0x..."), inlined}`.
struct Frames<'a>(&'a [Frame]);

impl Serialize for Frames<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(FrameJson::of))
    }
}

#[derive(Serialize)]
struct FrameJson<'a> {
    function: &'a Option<String>,
    file: &'a Option<String>,
    line: Option<u32>,
    module: &'a str,
    offset: String,
    inlined: bool,
}

impl<'a> FrameJson<'a> {
    fn of(f: &'a Frame) -> FrameJson<'a> {
        FrameJson {
            function: &f.function,
            file: &f.file,
            line: f.line,
            module: &f.module,
            offset: format!("{:#x}", f.offset),
            inlined: f.inlined,
        }
    }
}

#[derive(Serialize)]
struct Function {
    calls: u64,
    bytes: u64,
    time_ns: u64,
    timed_calls: u64,
    mean_ns: f64,
    p50_ns: Option<f64>,
    p99_ns: Option<f64>,
}

impl Function {
    fn of(f: &FnSummary) -> Function {
        Function {
            calls: f.calls,
            bytes: f.bytes,
            time_ns: f.time_ns,
            timed_calls: f.timed_calls,
            mean_ns: f.mean_ns(),
            p50_ns: f.quantile_ns(0.5),
            p99_ns: f.quantile_ns(0.99),
        }
    }
}

#[derive(Serialize)]
struct SizeBucket {
    min_bytes: u64,
    max_bytes: u64,
    count: u64,
}

#[derive(Serialize)]
struct LatencyBucket {
    min_ns: u64,
    max_ns: u64,
    count: u64,
}

#[derive(Serialize)]
struct Alloc<'a> {
    total_calls: u64,
    /// How many threads called the allocator (those of folded groups counted).
    threads: u64,
    time_ns: u64,
    share_of_thread_time: f64,
    /// Σ `threads[].alloc_cpu_ns`, and its share of the threads' CPU time (at most 1).
    cpu_ns: u64,
    share_of_cpu: f64,
    /// The CPU samples `cpu_ns` rests on (0: none, it comes from the calls' timing).
    cpu_samples: u64,
    /// The report's header and threads table show `cpu_ns` as the allocator's time (enough CPU
    /// samples), else `time_ns`.
    time_on_cpu: bool,
    functions: Named<Function>,
    by_function: Named<Function>,
    size_histogram: Vec<SizeBucket>,
    latency_histogram: Named<Vec<LatencyBucket>>,
    sites: Vec<AllocSite<'a>>,
    stack_sampling: Option<&'a StackSampling>,
    cross_thread_frees: Option<CrossFrees>,
}

#[derive(Serialize)]
struct CrossFrees {
    calls: u64,
    share: f64,
    sampled_frees: u64,
    sampled_cross: u64,
}

#[derive(Serialize)]
struct AllocSite<'a> {
    frames: Frames<'a>,
    /// An index into `frames`.
    user_frame: usize,
    function: &'static str,
    calls: u64,
    bytes: u64,
    time_ns: u64,
    samples: u64,
}

impl<'a> AllocSite<'a> {
    fn of(site: &'a SiteSummary) -> AllocSite<'a> {
        AllocSite {
            frames: Frames(&site.frames),
            user_frame: site.user,
            function: site.function,
            calls: site.calls,
            bytes: site.bytes,
            time_ns: site.time_ns,
            samples: site.samples,
        }
    }
}

#[derive(Serialize)]
struct OmpRegionJson {
    region: String,
    address: String,
    runs: u64,
    /// Team members per run, on average.
    team: f64,
    wall_ns: u64,
    /// The team's time at the closing barrier (load imbalance).
    barrier_ns: u64,
    barrier_share: f64,
    fork_join_ns: u64,
}

#[derive(Serialize)]
struct OmpRunJson {
    /// The thread that started the regions.
    tid: u32,
    /// From the process's start.
    begin_ns: u64,
    end_ns: u64,
    /// Its longest region (TBB: the algorithm, `tbb::parallel_for`).
    region: String,
    /// `OpenMP` or `TBB`.
    runtime: &'static str,
    /// Regions in the run.
    regions: u32,
    /// The team's share of its time in the run at the closing barriers.
    barrier_share: f64,
}

#[derive(Serialize)]
struct UnhookedLockJson {
    /// `malloc's arena lock (main_arena)`, `the pthread mutex at 0x...`, `a lock in readdir`.
    name: String,
    /// The lock word, where the samples caught one.
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    /// Estimated from the samples.
    wait_ns: u64,
    samples: u64,
    threads: usize,
    /// Where the heaviest waiting stack waited.
    #[serde(skip_serializing_if = "Option::is_none")]
    user_frame: Option<String>,
}

#[derive(Serialize)]
struct Lock<'a> {
    address: String,
    kind: &'static str,
    acquisitions: u64,
    contended: u64,
    wait_ns: u64,
    max_wait_ns: u64,
    hold_ns: u64,
    /// Holds timed, of which `hold_ns` is the estimate.
    timed_holds: u64,
    threads: usize,
    sites: Vec<LockSite<'a>>,
    holder_sites: Vec<LockSite<'a>>,
    /// A runtime's lock that waits on futex words (absent for pthread locks).
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<RuntimeLock<'a>>,
}

#[derive(Serialize)]
struct RuntimeLock<'a> {
    runtime: &'a str,
    object: &'a str,
    /// Futex words grouped into it (parked threads' own words).
    words: usize,
    /// The user's frame that took it, where the runtime parks threads on their own words.
    #[serde(skip_serializing_if = "Option::is_none")]
    taken_at: Option<String>,
}

impl<'a> Lock<'a> {
    fn of(l: &'a LockSummary) -> Lock<'a> {
        Lock {
            address: l.address_text(),
            kind: l.kind,
            acquisitions: l.acquisitions,
            contended: l.contended,
            wait_ns: l.wait_ns,
            max_wait_ns: l.max_wait_ns,
            hold_ns: l.hold_ns,
            timed_holds: l.timed_holds,
            threads: l.threads,
            sites: l.sites.iter().map(LockSite::of).collect(),
            holder_sites: l.holder_sites.iter().map(LockSite::of).collect(),
            runtime: l.runtime.as_ref().map(|r| RuntimeLock {
                runtime: &r.runtime,
                object: &r.object,
                words: r.words,
                taken_at: r.taken_at.as_ref().map(|f| f.display()),
            }),
        }
    }
}

#[derive(Serialize)]
struct LockSite<'a> {
    frames: Frames<'a>,
    user_frame: usize,
    contended: u64,
    wait_ns: u64,
    samples: u64,
}

impl<'a> LockSite<'a> {
    fn of(site: &'a LockSiteSummary) -> LockSite<'a> {
        LockSite {
            frames: Frames(&site.frames),
            user_frame: site.user,
            contended: site.contended,
            wait_ns: site.wait_ns,
            samples: site.samples,
        }
    }
}

#[derive(Serialize)]
struct Phase<'a> {
    name: &'a str,
    label: &'a str,
    tid: u32,
    depth: u32,
    begin_ns: u64,
    end_ns: u64,
    wall_ns: u64,
    alloc: PhaseAlloc,
    heap_before: Option<Heap<'a>>,
    heap_after: Option<Heap<'a>>,
}

#[derive(Serialize)]
struct PhaseAlloc {
    functions: Named<PhaseFunction>,
}

#[derive(Serialize)]
struct PhaseFunction {
    calls: u64,
    bytes: u64,
    time_ns: u64,
    timed_calls: u64,
    mean_ns: Option<f64>,
    p99_ns: Option<f64>,
}

impl PhaseFunction {
    fn of(f: &PhaseFn) -> PhaseFunction {
        PhaseFunction {
            calls: f.calls,
            bytes: f.bytes,
            time_ns: f.time_ns,
            timed_calls: f.timed_calls,
            mean_ns: f.mean_ns(),
            p99_ns: f.p99_ns,
        }
    }
}

impl<'a> Phase<'a> {
    fn of(p: &'a PhaseSummary, start_mono_ns: u64) -> Phase<'a> {
        Phase {
            name: &p.name,
            label: &p.label,
            tid: p.tid,
            depth: p.depth,
            begin_ns: p.begin_ns,
            end_ns: p.end_ns,
            wall_ns: p.wall_ns(),
            alloc: PhaseAlloc {
                functions: Named(
                    p.fns
                        .iter()
                        .map(|f| (f.name, PhaseFunction::of(f)))
                        .collect(),
                ),
            },
            heap_before: p.heap_before.as_ref().map(|h| Heap::of(h, start_mono_ns)),
            heap_after: p.heap_after.as_ref().map(|h| Heap::of(h, start_mono_ns)),
        }
    }
}

#[derive(Serialize)]
struct Heap<'a> {
    seq: u32,
    label: &'a str,
    tid: u32,
    t_ns: u64,
    duration_ns: u64,
    glibc: bool,
    in_use_bytes: u64,
    free_bytes: u64,
    fastbin_bytes: u64,
    top_bytes: u64,
    mmap_bytes: u64,
    arena_bytes: u64,
    free_chunks: u64,
    fastbin_chunks: u64,
    fragmentation: f64,
    arenas: Option<u64>,
    rss_bytes: u64,
    bins: Option<&'a [FreeBin]>,
}

impl<'a> Heap<'a> {
    fn of(h: &'a HeapSnapshot, start_mono_ns: u64) -> Heap<'a> {
        Heap {
            seq: h.seq,
            label: &h.label,
            tid: h.tid,
            t_ns: h.mono_ns.saturating_sub(start_mono_ns),
            duration_ns: h.duration_ns,
            glibc: h.glibc,
            in_use_bytes: h.in_use_bytes(),
            free_bytes: h.free_bytes,
            fastbin_bytes: h.fastbin_bytes,
            top_bytes: h.top_bytes,
            mmap_bytes: h.mmap_bytes,
            arena_bytes: h.arena_bytes,
            free_chunks: h.all_free_chunks(),
            fastbin_chunks: h.fastbin_chunks,
            fragmentation: h.fragmentation(),
            arenas: h.info.as_ref().map(|i| i.arenas),
            rss_bytes: h.rss_bytes,
            bins: h.info.as_ref().map(|i| i.bins.as_slice()),
        }
    }
}

#[derive(Serialize)]
struct Sampling {
    enabled: bool,
    #[serde(flatten)]
    details: Option<SamplingDetails>,
}

#[derive(Serialize)]
struct SamplingDetails {
    cpu_hz: u32,
    wall_hz: u32,
    signal: Option<String>,
    moved_from: Option<String>,
    note: Option<String>,
    cpu_samples: u64,
    wall_samples: u64,
    dropped: u64,
}

impl Sampling {
    fn of(sampling: Option<&SamplingInfo>) -> Sampling {
        match sampling {
            None => Sampling {
                enabled: false,
                details: None,
            },
            Some(s) => Sampling {
                enabled: s.cpu_hz > 0 || s.wall_hz > 0,
                details: Some(SamplingDetails {
                    cpu_hz: s.cpu_hz,
                    wall_hz: s.wall_hz,
                    signal: s.signal.map(signal_name),
                    moved_from: s.moved_from.map(signal_name),
                    note: sampling_note(s),
                    cpu_samples: s.cpu_samples,
                    wall_samples: s.wall_samples,
                    dropped: s.dropped,
                }),
            },
        }
    }
}

#[derive(Serialize)]
struct Hot<'a> {
    function: &'a str,
    category: &'static str,
    samples: u64,
    ns: u64,
    user_frame: Option<String>,
    frames: Frames<'a>,
}

impl<'a> Hot<'a> {
    fn of(h: &'a HotFunction) -> Hot<'a> {
        Hot {
            function: &h.function,
            category: h.category.key(),
            samples: h.samples,
            ns: h.ns,
            user_frame: h.frames.get(h.user).map(Frame::display),
            frames: Frames(&h.frames),
        }
    }
}

#[derive(Serialize)]
struct Timeline<'a> {
    slice_ns: u64,
    start_ns: u64,
    threads: Vec<TimelineThread<'a>>,
}

impl<'a> Timeline<'a> {
    fn of(r: &'a StateReport) -> Timeline<'a> {
        Timeline {
            slice_ns: r.slice_ns,
            start_ns: 0,
            threads: r
                .threads
                .iter()
                .map(|t| TimelineThread {
                    tid: t.tid,
                    name: &t.name,
                    label: ThreadId::of_states(t).label(),
                    slices: t
                        .slices
                        .iter()
                        .map(|s| Slice {
                            ns: *s,
                            slice_ns: r.slice_ns,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct TimelineThread<'a> {
    tid: u32,
    name: &'a str,
    /// Its label, as every view prints it (`ThreadId::label`).
    label: String,
    slices: Vec<Slice>,
}

/// One slice of a thread's timeline: `{category: share}` for the categories present, the shares
/// rounded to 1e-4 (`ThreadStates::slice_shares`, which the html timeline draws).
struct Slice {
    ns: crate::analysis::states::PerCategory<u64>,
    slice_ns: u64,
}

impl Serialize for Slice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for c in CATEGORIES {
            let ns = self.ns[c.index()];
            if ns > 0 {
                let share = crate::analysis::states::rounded_share(ns, self.slice_ns);
                map.serialize_entry(c.key(), &share)?;
            }
        }
        map.end()
    }
}

#[derive(Serialize)]
struct Efficiency {
    compute_ns: u64,
    wall_ns: u64,
    threads: usize,
    cpus: u32,
    value: f64,
}

/// The working threads' efficiency (`analysis::efficiency`), the figure the parallel-efficiency
/// finding reads.
#[derive(Serialize)]
struct WorkingEfficiencyJson {
    value: f64,
    compute_ns: u64,
    basis_ns: u64,
    /// What `basis_ns` is: `awake_not_waiting`, `wall_x_threads` or `cpu_alloc_lock`.
    basis: &'static str,
    /// The thread-state samples it comes from (0: from CPU times, not samples).
    samples: u64,
    threads: usize,
    cpus: u32,
    /// The time each part is a share of.
    parts_basis_ns: u64,
    /// Each state's time that is not computation.
    parts: Named<u64>,
    unattributed_ns: u64,
}

impl WorkingEfficiencyJson {
    fn of(e: &crate::analysis::efficiency::WorkingEfficiency) -> Self {
        WorkingEfficiencyJson {
            value: e.value,
            compute_ns: e.compute_ns as u64,
            basis_ns: e.basis_ns as u64,
            basis: e.basis.key(),
            samples: e.samples,
            threads: e.threads,
            cpus: e.cpus,
            parts_basis_ns: e.parts_basis_ns as u64,
            parts: Named(
                e.parts
                    .iter()
                    .map(|&(c, ns)| (c.key(), ns as u64))
                    .collect(),
            ),
            unattributed_ns: e.unattributed_ns as u64,
        }
    }
}
