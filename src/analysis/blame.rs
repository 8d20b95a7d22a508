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
use super::runtime::{self, Role};
use super::states::{
    Category, Rules, SampledStack, StateReport, public_libc_name, syscall_name, waits_for_input,
};
use super::summary::Summary;
use super::threads::ThreadId;
use super::waitfor::WaitFor;
use crate::profile::Profile;
use crate::profile::samples::SampleKind;
use crate::symbols::{Frame, is_runtime_frame, user_frame};
use std::collections::{BTreeMap, HashMap};

/// What a thread did in a sample's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Doing {
    Work,
    WaitingForWork,
    /// Waiting for a lock, a contended atomic or a spin: a CPU the resource's release frees is
    /// this thread's, not a thread waiting for work.
    WaitingForResource,
    /// Waiting for the world outside (a client, a timer), or stallscope's own work: not counted.
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
    /// From a sample of the thread off a CPU.
    off_cpu: bool,
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
    /// Where it ran, in words: its frame, or for a thread without stacks (it blocks the sampling
    /// signal) "the work of thread ...".
    pub fn place(&self) -> String {
        if self.frame.module.is_empty() {
            format!(
                "the work of thread {} (no stack: it blocks the sampling signal)",
                self.frame.name()
            )
        } else if self.frame.function.is_none() {
            format!("code in {} (without symbols)", self.frame.module_name())
        } else {
            self.frame.display()
        }
    }

    /// The name other findings would give the place: its function, the module of code without
    /// symbols, the thread whose samples have no stack.
    pub fn name(&self) -> String {
        match &self.frame.function {
            None => self.frame.module_name().to_string(),
            Some(_) => self.frame.name(),
        }
    }

    /// The labels of the threads that ran it while others waited, most time first.
    pub fn thread_labels(&self, states: &StateReport) -> Vec<String> {
        self.threads
            .iter()
            .filter_map(|&i| states.threads.get(i))
            .map(|t| ThreadId::of_states(t).label())
            .collect()
    }

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
    pub uncharged_ns: u64,
}

/// Stretches of work others waited through: (begin, end, thread).
type Stretches = Vec<(u64, u64, usize)>;

/// The share of its life a thread must work to count among the threads that could have taken
/// part of the work, unless a runtime keeps it for that: a thread that only waits (rustc's main
/// thread joining its compiler thread, a signal-handling or jobserver thread: under 1%) loses
/// nothing while others work.
const WORKER_MIN_SHARE: f64 = 0.02;

/// The share of the busiest thread's time on a culprit below which another thread that ran it
/// is not counted among its threads.
const MINOR_THREAD_SHARE: f64 = 0.1;

/// How many culprits are kept (the views list a few; findings take the heaviest).
const KEPT: usize = 8;

/// What a sample says the thread did.
fn doing(stack: &SampledStack, kind: SampleKind, syscall: Option<String>) -> Doing {
    // Asleep in a call that may wait for the world outside (a client, a timer): neither work nor
    // a wait that another thread ends. A read of a file looks the same as a read of a socket:
    // I/O there holds its CPU as a resource does (rg's worker reading a file left no CPU free
    // for the main thread joining it; a server's thread reading its socket is no work to charge
    // an idle pool's waits to).
    if kind == SampleKind::Wall && syscall.as_deref().is_some_and(waits_for_input) {
        return if stack.category == Category::Io {
            Doing::WaitingForResource
        } else {
            Doing::Other
        };
    }
    match stack.category {
        Category::Compute | Category::Allocator | Category::KernelMemory | Category::Io => {
            Doing::Work
        }
        Category::Idle | Category::Blocked => Doing::WaitingForWork,
        Category::Lock | Category::Atomic | Category::Spinning | Category::Runnable => {
            Doing::WaitingForResource
        }
        Category::Profiler => Doing::Other,
    }
}

/// The size of the largest object a futex word of a condition variable or semaphore lies in
/// (glibc's pthread_cond_t: 48 bytes; sem_t: 32).
const WAIT_OBJECT_BYTES: u64 = 48;

/// Objects threads take turns on (a resource held in turn, not an event), and per thread (by
/// serial) its recorded waits on them (ns from the process's start, by begin; the hooks time a
/// sample of the calls, so a sample's futex word tells the rest).
struct TurnObjects {
    objects: Vec<u64>,
    waits: HashMap<u32, Vec<(u64, u64)>>,
}

impl TurnObjects {
    /// Whether a sample of thread `serial` ending at `at` waited on one (its futex word `word`).
    fn holds(&self, serial: u32, at: u64, word: u64) -> bool {
        self.objects
            .iter()
            .any(|&o| word >= o && word < o + WAIT_OBJECT_BYTES)
            || self.waits.get(&serial).is_some_and(|w| within(w, at))
    }
}

fn turn_objects(profile: &Profile, waitfor: Option<&WaitFor>) -> TurnObjects {
    let objects: Vec<u64> = waitfor
        .map(WaitFor::turns)
        .unwrap_or_default()
        .iter()
        .map(|t| t.object)
        .collect();
    let start = profile.process.start_mono_ns;
    let mut out: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for w in profile.waits.iter().filter(|w| objects.contains(&w.object)) {
        out.entry(w.serial).or_default().push((
            w.start_mono_ns.saturating_sub(start),
            w.end_mono_ns.saturating_sub(start),
        ));
    }
    for list in out.values_mut() {
        list.sort_unstable();
    }
    TurnObjects {
        objects,
        waits: out,
    }
}

/// Whether `at` lies in one of the sorted waits.
fn within(waits: &[(u64, u64)], at: u64) -> bool {
    let i = waits.partition_point(|w| w.0 < at);
    waits[..i].iter().rev().take(4).any(|w| w.1 >= at)
}

/// Each thread's stretches from its samples, in time order, not overlapping.
fn stretches(
    profile: &Profile,
    states: &StateReport,
    waitfor: Option<&WaitFor>,
) -> Vec<Vec<Stretch>> {
    let turns = turn_objects(profile, waitfor);
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
        // What a thread waited in where `/proc` refused to say (a privilege drop) is unknown:
        // not counted, rather than guessed.
        let doing = match doing(stack, s.kind, syscall) {
            _ if s.blind() => Doing::Other,
            Doing::WaitingForWork if turns.holds(s.serial, end, s.object) => {
                Doing::WaitingForResource
            }
            d => d,
        };
        out[ti].push(Stretch {
            begin: end.saturating_sub(s.weight_ns),
            end,
            doing,
            stack: ci,
            thread: ti,
            off_cpu: s.kind == SampleKind::Wall,
        });
    }
    for (t, list) in states.threads.iter().zip(out.iter_mut()) {
        *list = placed(std::mem::take(list), t.kernel.map(|k| k.run_delay_ns));
    }
    // Only threads that work some of their lives wait for work; the others' waits are no loss.
    // Their work by the states (the samples' weights scaled to the kernel's figures).
    // A thread a runtime keeps to take work (it waited in the runtime's idle team or barrier)
    // counts whatever its share: an OpenMP primary whose part of an uneven loop was small read
    // 0.7-5.6% of its life at work in runs of one program.
    let handing = handing_off(profile, states, waitfor, &out);
    for ((t, list), hands_off) in states.threads.iter().zip(out.iter_mut()).zip(handing) {
        let pooled = || {
            list.iter().any(|s| {
                s.doing == Doing::WaitingForWork
                    && states.stacks.get(s.stack as usize).is_some_and(|st| {
                        runtime::wait_of(&st.frames).is_some_and(|(w, _)| w.role == Role::Idle)
                    })
            })
        };
        if (t.work_ns() as f64) < WORKER_MIN_SHARE * t.life_ns as f64 && !hands_off && !pooled() {
            list.retain(|s| s.doing != Doing::WaitingForWork);
        }
    }
    out
}

/// The share of its life a thread may spend waiting for the world outside (a client, a timer)
/// and still count as one that computes on its own, and the share it must compute.
const COMPUTES_MAX_OUTSIDE: f64 = 0.05;
const COMPUTES_MIN_WORK: f64 = 0.1;

/// Per thread of the states: whether it handed its work to another thread and waits for the
/// result. It waited on a condition variable or semaphore that a thread of the process
/// signalled, and that thread computes on its own (it works at least a tenth of its life and
/// waits for the world outside under a twentieth): what the waiter waits for is that thread's
/// work, so it could have taken part of it. `zstd -T2` and `xz -T2` on an input of one job:
/// their main thread reads the input, hands it over and waits for the one worker. A thread that
/// only joins another (rustc's main thread) hands nothing over; a server's idle thread waits
/// for work from a thread driven by its clients (it waits for the world outside): neither
/// loses anything while the others work.
fn handing_off(
    profile: &Profile,
    states: &StateReport,
    waitfor: Option<&WaitFor>,
    out: &[Vec<Stretch>],
) -> Vec<bool> {
    let mut handing = vec![false; states.threads.len()];
    let Some(w) = waitfor else {
        return handing;
    };
    let index: HashMap<u32, usize> = states
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();
    let of = |p: usize| {
        profile
            .threads
            .get(p)
            .and_then(|t| index.get(&t.serial).copied())
    };
    let computes = |i: usize| {
        let t = &states.threads[i];
        let life = t.life_ns.max(1) as f64;
        let outside: u64 = out[i]
            .iter()
            .filter(|s| s.doing == Doing::Other)
            .map(|s| s.end - s.begin)
            .sum();
        t.work_ns() as f64 >= COMPUTES_MIN_WORK * life
            && (outside as f64) < COMPUTES_MAX_OUTSIDE * life
    };
    for e in w.edges.iter().filter(|e| {
        matches!(
            e.kind,
            Some(crate::profile::samples::WaitKind::Condition)
                | Some(crate::profile::samples::WaitKind::Semaphore)
        )
    }) {
        let (Some(waiter), Some(other)) = (of(e.waiter), e.other.and_then(of)) else {
            continue;
        };
        if waiter != other && computes(other) {
            handing[waiter] = true;
        }
    }
    handing
}

/// How many earlier looks an off-CPU sample's time may reach back past (the interposer gives a
/// look's time only to a sample seen in the last four looks).
const LOOKS_BACK: usize = 4;

/// One thread's samples as stretches of time, not overlapping. A CPU sample stands for its CPU
/// time just before it. An off-CPU sample stands for the thread's time off a CPU since the last
/// look, which may lie in several gaps between its CPU stretches (a thread that sleeps and wakes
/// many times between two looks): it fills the gaps before it, latest first, until its weight is
/// placed. Placing it as one stretch before the look laid it over the CPU stretches, where a
/// thread cannot both work and wait, while the real gaps read as waits for a CPU: a pipeline's
/// threads, taking 3.5 ms turns at a serial stage, had two thirds of their waits lost that way.
/// A gap no off-CPU sample fills, before a CPU sample, is time off a CPU without a sample off it:
/// waiting for a CPU (preempted), or for a lock handed back in less than a sampling period.
/// Either way it wanted a CPU: a CPU it would take was not free (two workers, one of them
/// preempted, had read as one working alone while main joined).
fn placed(samples: Vec<Stretch>, run_delay_ns: Option<u64>) -> Vec<Stretch> {
    let (mut on, mut off): (Vec<Stretch>, Vec<Stretch>) =
        samples.into_iter().partition(|s| !s.off_cpu);
    on.sort_by_key(|s| (s.end, s.begin));
    off.sort_by_key(|s| s.end);
    let mut last_end = 0;
    for s in &mut on {
        s.begin = s.begin.max(last_end).min(s.end);
        last_end = s.end;
    }
    // Covered time by (begin, end), disjoint: the CPU stretches, then the off-CPU pieces as placed.
    let mut covered: BTreeMap<(u64, u64), Stretch> =
        on.into_iter().map(|s| ((s.begin, s.end), s)).collect();
    let mut looks: Vec<u64> = Vec::with_capacity(off.len());
    for &s in &off {
        let mut left = s.end - s.begin;
        let floor = looks.len().checked_sub(LOOKS_BACK).map_or(0, |i| looks[i]);
        looks.push(s.end);
        // Walk back from the sample through the covered stretches, filling the gaps.
        let mut until = s.end;
        let mut pieces = Vec::new();
        while left > 0 && until > floor {
            let before = covered.range(..(until, 0)).next_back().map(|(_, c)| *c);
            let from = before.map_or(floor, |c| c.end.min(until).max(floor));
            if until > from {
                let take = (until - from).min(left);
                pieces.push(Stretch {
                    begin: until - take,
                    end: until,
                    ..s
                });
                left -= take;
            }
            let Some(c) = before else { break };
            until = c.begin;
        }
        covered.extend(pieces.into_iter().map(|p| ((p.begin, p.end), p)));
    }
    let mut covered: Vec<Stretch> = covered.into_values().collect();
    // The gaps left, before a CPU sample: the kernel's run-queue delay tells how much of them
    // the thread waited for a CPU; the rest it slept, in what the next look found it in.
    let gaps: Vec<(u64, u64, Stretch)> = covered
        .windows(2)
        .filter(|w| !w[1].off_cpu && w[1].begin > w[0].end)
        .map(|w| (w[0].end, w[1].begin, w[1]))
        .collect();
    let gap_ns: u64 = gaps.iter().map(|g| g.1 - g.0).sum();
    let queued_share = run_delay_ns.map_or(1.0, |r| (r as f64 / gap_ns.max(1) as f64).min(1.0));
    for (begin, end, next) in gaps {
        // Waiting for a CPU comes last, just before the thread runs again.
        let queued = ((end - begin) as f64 * queued_share) as u64;
        let asleep_until = end - queued;
        let look = off.partition_point(|l| l.end < end);
        match off.get(look) {
            Some(l) if asleep_until > begin => covered.push(Stretch {
                begin,
                end: asleep_until,
                ..*l
            }),
            _ => {}
        }
        let from = if off.get(look).is_some() {
            asleep_until
        } else {
            begin
        };
        covered.push(Stretch {
            begin: from,
            end,
            doing: Doing::WaitingForResource,
            off_cpu: true,
            ..next
        });
    }
    covered.sort_by_key(|s| (s.end, s.begin));
    covered.retain(|s| s.end > s.begin && s.doing != Doing::Other);
    covered
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
    uncharged_ns: f64,
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
        // Per segment [times[k], times[k + 1]): working threads, threads waiting for work, and
        // threads waiting for a resource, as differences.
        let mut working = vec![0i64; times.len() + 1];
        let mut waiting = vec![0i64; times.len() + 1];
        let mut wanting = vec![0i64; times.len() + 1];
        for s in all {
            let d = match s.doing {
                Doing::Work => &mut working,
                Doing::WaitingForWork => &mut waiting,
                _ => &mut wanting,
            };
            d[at(s.begin)] += 1;
            d[at(s.end)] -= 1;
        }
        let p = f64::from(cpus.max(1));
        let n = times.len();
        let (mut charged, mut gain, mut alone) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let (mut w, mut i, mut r) = (0i64, 0i64, 0i64);
        let (mut charged_ns, mut uncharged_ns) = (0.0, 0.0);
        for k in 0..n.saturating_sub(1) {
            w += working[k];
            i += waiting[k];
            r += wanting[k];
            let dt = (times[k + 1] - times[k]) as f64;
            let (wf, wi) = (w.max(0) as f64, i.max(0) as f64);
            let mid = times[k] / 2 + times[k + 1] / 2;
            // Threads of the process on a run queue in the bin (the kernel's figures) had no CPU
            // free: other processes held them.
            let queued = runnable
                .get((mid / bin_ns.max(1)) as usize)
                .copied()
                .unwrap_or(0.0)
                + r.max(0) as f64;
            // Waiting threads for which a CPU was free: not taken by a working thread, nor
            // wanted by a runnable one (a worker kept off its CPU by other load left the CPU
            // busy, not free: two workers beside other load had read as one working alone),
            // nor by one waiting for a lock (its cost is the lock's: the main thread joining
            // two threads that take turns on CPython's GIL lost nothing to the one running).
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
            uncharged_ns += (wi - lost) * dt;
        }
        Integrals {
            times,
            charged,
            gain,
            alone,
            charged_ns,
            uncharged_ns,
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

/// Stands for the work of a thread whose samples have no stack: its label as the function, no
/// module (`Culprit::place`); code without symbols is a frame with a module and no function.
fn thread_frame(label: String) -> Frame {
    Frame {
        function: Some(label),
        ..Frame::default()
    }
}

/// The key a working stack's time is grouped by: its user frame's function and file.
fn culprit_key(frame: &Frame) -> (String, String) {
    (frame.name(), frame.file.clone().unwrap_or_default())
}

/// The words for what a waiting stack waits in: the runtime's own name for it, else the
/// function the state rules call a wait (`pthread_join`, `pthread_cond_wait`), as its public
/// name: the outermost frame of its module above the innermost wait (glibc's
/// `pthread_cond_wait_common` is inside `pthread_cond_wait`), with the code outside the
/// runtime that called it (`pthread_cond_wait in lzma_code (liblzma.so.5)`: the library a
/// waiter waits inside tells whose work it waits for); "a wait" where no frame says (a stack
/// the sampler could not read).
fn wait_words(frames: &[Frame], rules: &Rules) -> String {
    if let Some((entry, _)) = runtime::wait_of(frames) {
        return entry.object.clone();
    }
    let Some(at) = frames
        .iter()
        .position(|f| matches!(rules.by_frame(f), Some(Category::Blocked | Category::Idle)))
    else {
        return "a wait".to_string();
    };
    let module = &frames[at].module;
    let outer = frames[at..]
        .iter()
        .take_while(|f| &f.module == module)
        .filter(|f| f.function.is_some())
        .last()
        .unwrap_or(&frames[at]);
    let Some(name) = outer.function.as_deref().or(frames[at].function.as_deref()) else {
        return "a wait".to_string();
    };
    let wait = public_libc_name(crate::symbols::qualified_name(name)).to_string();
    match frames[at..].iter().find(|f| !is_runtime_frame(f)) {
        Some(f) if f.function.is_some() => format!("{wait} in {}", f.short_text()),
        Some(f) if !f.module.is_empty() => {
            format!("{wait} in code of {} (without symbols)", f.module_name())
        }
        _ => wait,
    }
}

/// One working stack's figures.
struct Tally {
    /// The program's own frames of the stack, outermost first (the user frame last), as key
    /// ids, and the frames themselves.
    chain: Vec<usize>,
    frames: Vec<Frame>,
    thread_ns: HashMap<usize, f64>,
    charged: f64,
    gain: f64,
    alone: f64,
    work: u64,
    /// Its stretches that others waited through.
    stretches: Stretches,
}

impl Tally {
    fn new(frames: &[Frame], keys: &mut HashMap<(String, String), usize>) -> Tally {
        let user = user_frame(frames);
        let mut chain = Vec::new();
        let mut own = Vec::new();
        let outward = frames.get(user).into_iter().chain(
            frames
                .iter()
                .skip(user + 1)
                .filter(|f| !is_runtime_frame(f) && f.function.is_some()),
        );
        for f in outward {
            // Code without symbols (a stripped program) is one place per module: its addresses
            // would split one stretch of work into many small ones that reach no threshold.
            let f = match &f.function {
                Some(_) => f.clone(),
                None => Frame {
                    module: f.module.clone(),
                    ..Frame::default()
                },
            };
            let next = keys.len();
            let id = *keys.entry(culprit_key(&f)).or_insert(next);
            // Recursion and inlined copies: a function once, at its innermost place.
            if !chain.contains(&id) {
                chain.push(id);
                own.push(f);
            }
        }
        chain.reverse();
        own.reverse();
        Tally {
            chain,
            frames: own,
            thread_ns: HashMap::new(),
            charged: 0.0,
            gain: 0.0,
            alone: 0.0,
            work: 0,
            stretches: Vec::new(),
        }
    }
}

/// A share of a place's charge that one of its callees must hold to be named instead of it;
/// several callees each holding `SPLIT_SHARE` and together `NARROW_SHARE` are named each.
const NARROW_SHARE: f64 = 0.6;
const SPLIT_SHARE: f64 = 0.2;

/// The places the charge is named at: from each outermost frame, down the calls while one callee
/// holds most of it (so a serial stretch that calls many small functions is named by the one
/// that calls them, and a single hot loop by itself); where an outermost frame's charge splits
/// among a few heavy callees, each of them. Each is (the stacks it stands for, the depth of its
/// frame in their chains); places of the same function reached from different outer frames (the
/// team's master and its workers) are merged.
fn places(tallies: &[Tally]) -> Vec<(Vec<usize>, usize)> {
    fn descend(
        tallies: &[Tally],
        set: Vec<usize>,
        level: usize,
        out: &mut Vec<(Vec<usize>, usize)>,
    ) {
        let total: f64 = set.iter().map(|&i| tallies[i].charged).sum();
        let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
        for &i in &set {
            if let Some(&k) = tallies[i].chain.get(level + 1) {
                children.entry(k).or_default().push(i);
            }
        }
        let charge = |v: &Vec<usize>| v.iter().map(|&i| tallies[i].charged).sum::<f64>();
        let mut groups: Vec<(f64, Vec<usize>)> =
            children.into_values().map(|v| (charge(&v), v)).collect();
        groups.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        if total > 0.0 {
            if groups
                .first()
                .is_some_and(|(c, _)| *c >= NARROW_SHARE * total)
            {
                let (_, first) = groups.swap_remove(0);
                return descend(tallies, first, level + 1, out);
            }
            let heavy: Vec<&(f64, Vec<usize>)> = groups
                .iter()
                .filter(|(c, _)| *c >= SPLIT_SHARE * total)
                .collect();
            let held: f64 = heavy.iter().map(|(c, _)| c).sum();
            // An outermost frame (main, a thread's start) says little: where its charge splits,
            // each part is named; further in, the frame that splits it is the place (a serial
            // step calling three small functions is the step).
            if level == 0 && heavy.len() >= 2 && held >= NARROW_SHARE * total {
                for (_, v) in heavy {
                    descend(tallies, v.clone(), level + 1, out);
                }
                return;
            }
        }
        out.push((set, level));
    }
    let mut roots: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, t) in tallies.iter().enumerate() {
        roots.entry(t.chain[0]).or_default().push(i);
    }
    let mut roots: Vec<Vec<usize>> = roots.into_values().collect();
    roots.sort();
    let mut found = Vec::new();
    for set in roots {
        descend(tallies, set, 0, &mut found);
    }
    // The same function reached from different outer frames is one place.
    let mut merged: Vec<(Vec<usize>, usize)> = Vec::new();
    let mut by_key: HashMap<usize, usize> = HashMap::new();
    for (set, level) in found {
        let key = tallies[set[0]].chain[level];
        match by_key.get(&key) {
            Some(&m) => merged[m].0.extend(set),
            None => {
                by_key.insert(key, merged.len());
                merged.push((set, level));
            }
        }
    }
    merged
}

/// The culprit a place stands for, with its stretches that others waited through.
fn culprit_of(tallies: &[Tally], members: &[usize], level: usize) -> (Culprit, Stretches) {
    let key = tallies[members[0]].chain[level];
    // Each member's depth of the place's function (members merged from other outer frames
    // hold it at another depth).
    let depth = |t: &Tally| t.chain.iter().position(|&k| k == key).unwrap_or(0);
    let heaviest = members
        .iter()
        .copied()
        .max_by(|&a, &b| {
            tallies[a]
                .charged
                .total_cmp(&tallies[b].charged)
                .then(b.cmp(&a))
        })
        .unwrap_or(members[0]);
    let top = &tallies[heaviest];
    let d = depth(top);
    let mut threads: HashMap<usize, f64> = HashMap::new();
    let mut stretches = Vec::new();
    let (mut charged, mut gain, mut alone, mut work) = (0.0, 0.0, 0.0, 0u64);
    for &i in members {
        let t = &tallies[i];
        charged += t.charged;
        gain += t.gain;
        alone += t.alone;
        work += t.work;
        for (&k, &v) in &t.thread_ns {
            *threads.entry(k).or_default() += v;
        }
        stretches.extend_from_slice(&t.stretches);
    }
    let mut threads: Vec<(usize, f64)> = threads.into_iter().collect();
    threads.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // The threads that ran it: those that ran a share of it worth naming. A thread that ran a
    // sliver (zstd's main thread reading the input in the same stripped module while its one
    // worker compressed) did not take turns at it.
    let most = threads.first().map_or(0.0, |x| x.1);
    threads.retain(|x| x.1 >= MINOR_THREAD_SHARE * most);
    let culprit = Culprit {
        frame: top.frames[d].clone(),
        caller: d.checked_sub(1).map(|c| top.frames[c].clone()),
        construct: None,
        threads: threads.iter().map(|x| x.0).collect(),
        alone_ns: alone as u64,
        work_ns: work,
        charged_ns: charged as u64,
        gain_ns: gain as u64,
        concurrent_ns: concurrent(&stretches),
        waits: Vec::new(),
    };
    (culprit, stretches)
}

pub fn build(
    profile: &Profile,
    states: &StateReport,
    concurrency: Option<&Concurrency>,
    summary: &Summary,
    waitfor: Option<&WaitFor>,
) -> Option<Blame> {
    let per_thread = stretches(profile, states, waitfor);
    let all: Vec<&Stretch> = per_thread.iter().flatten().collect();
    if all.is_empty() {
        return None;
    }
    let cpus = concurrency.map_or(states.cpus, |c| c.cpus).max(1);
    let runnable: Vec<f64> =
        concurrency.map_or_else(Vec::new, |c| c.bins.iter().map(|b| b.runnable).collect());
    let bin_ns = concurrency.map_or(1, |c| c.bin_ns);
    let integrals = Integrals::build(&all, cpus, &runnable, bin_ns);
    // Per working stack: what it was charged, and its chain of the program's own frames.
    // A thread that blocks the sampling signal has its time on a CPU from the kernel's clock,
    // without a stack: its work is named by the thread.
    let mut tallies: HashMap<(u32, Option<usize>), Tally> = HashMap::new();
    let mut keys: HashMap<(String, String), usize> = HashMap::new();
    for s in all.iter().filter(|s| s.doing == Doing::Work) {
        let Some(stack) = states.stacks.get(s.stack as usize) else {
            continue;
        };
        let unsampled = stack.frames.is_empty();
        let t = tallies
            .entry((s.stack, unsampled.then_some(s.thread)))
            .or_insert_with(|| {
                if unsampled {
                    let label = ThreadId::of_states(&states.threads[s.thread]).label();
                    Tally::new(&[thread_frame(label)], &mut keys)
                } else {
                    Tally::new(&stack.frames, &mut keys)
                }
            });
        t.work += s.end - s.begin;
        let (charged, gain, alone) = integrals.over(s.begin, s.end);
        if alone <= 0.0 {
            continue;
        }
        t.charged += charged;
        t.gain += gain;
        t.alone += alone;
        *t.thread_ns.entry(s.thread).or_default() += alone;
        t.stretches.push((s.begin, s.end, s.thread));
    }
    // In the stacks' order, so that equal charges are named the same way every time.
    let mut tallies: Vec<((u32, Option<usize>), Tally)> = tallies
        .into_iter()
        .filter(|(_, t)| !t.chain.is_empty())
        .collect();
    tallies.sort_by_key(|(k, _)| *k);
    let tallies: Vec<Tally> = tallies.into_iter().map(|(_, t)| t).collect();
    let mut culprits: Vec<(Culprit, Stretches)> = places(&tallies)
        .into_iter()
        .map(|(members, level)| culprit_of(&tallies, &members, level))
        .filter(|(c, _)| c.charged_ns > 0)
        .collect();
    culprits.sort_by(|(a, _), (b, _)| {
        b.charged_ns
            .cmp(&a.charged_ns)
            .then_with(|| a.frame.display().cmp(&b.frame.display()))
    });
    culprits.truncate(KEPT);
    // For the kept ones: what the other threads waited in while they ran (worked out once per
    // waiting stack), and the parallel construct around them.
    let mut words: HashMap<u32, String> = HashMap::new();
    let rules = Rules::builtin();
    for (c, mine) in &mut culprits {
        let union = union_of(mine);
        let mut waits: HashMap<String, u64> = HashMap::new();
        for s in all.iter().filter(|s| s.doing == Doing::WaitingForWork) {
            let overlap = overlap_ns(&union, s.begin, s.end);
            let Some(stack) = states.stacks.get(s.stack as usize).filter(|_| overlap > 0) else {
                continue;
            };
            let word = words
                .entry(s.stack)
                .or_insert_with(|| wait_words(&stack.frames, &rules));
            *waits.entry(word.clone()).or_default() += overlap;
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
        uncharged_ns: integrals.uncharged_ns as u64,
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
            off_cpu: false,
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
        assert_eq!(i.uncharged_ns as u64, 0);
        let (charged, gain, alone) = i.over(0, 100);
        assert_eq!((charged as u64, gain as u64, alone as u64), (60, 30, 60));
        // On one CPU nothing was lost: the waiter had no CPU to work on.
        let one = Integrals::build(&all, 1, &[], 1);
        assert_eq!(one.charged_ns as u64, 0);
        assert_eq!(one.uncharged_ns as u64, 60);
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
        assert_eq!(i.uncharged_ns as u64, 100);
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

    fn frame(name: &str) -> Frame {
        Frame {
            function: Some(name.into()),
            file: Some("p.c".into()),
            line: Some(1),
            module: "/bin/p".into(),
            ..Frame::default()
        }
    }

    /// Tallies of stacks (innermost first) with their charge.
    fn tallies(stacks: &[(&[&str], f64)]) -> Vec<Tally> {
        let mut keys = HashMap::new();
        stacks
            .iter()
            .map(|(names, charged)| {
                let frames: Vec<Frame> = names.iter().map(|n| frame(n)).collect();
                let mut t = Tally::new(&frames, &mut keys);
                t.charged = *charged;
                t
            })
            .collect()
    }

    fn named(t: &[Tally]) -> Vec<String> {
        let mut v: Vec<String> = places(t)
            .iter()
            .map(|(members, level)| culprit_of(t, members, *level).0.frame.name())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_charge_is_named_where_one_callee_holds_most_of_it_or_where_it_splits() {
        // A serial step calling three small functions: the step is named, not one of them.
        let step = tallies(&[
            (&["a", "step", "main"], 3.0),
            (&["b", "step", "main"], 3.0),
            (&["c", "step", "main"], 3.0),
            (&["work", "main"], 1.0),
        ]);
        assert_eq!(named(&step), vec!["step"]);
        // One hot loop: itself.
        let hot = tallies(&[(&["loop", "step", "main"], 9.0), (&["other", "main"], 1.0)]);
        assert_eq!(named(&hot), vec!["loop"]);
        // Two heavy places under main: each.
        let two = tallies(&[
            (&["x", "first", "main"], 5.0),
            (&["y", "second", "main"], 5.0),
        ]);
        assert_eq!(named(&two), vec!["x", "y"]);
        // The same function reached from two outer frames (a team's master and a worker) is one
        // place with both charges.
        let team = tallies(&[
            (&["body", "region", "main"], 4.0),
            (&["body", "region"], 4.0),
        ]);
        let found = places(&team);
        assert_eq!(found.len(), 1);
        let (c, _) = culprit_of(&team, &found[0].0, found[0].1);
        assert_eq!((c.frame.name(), c.charged_ns), ("body".to_string(), 8));
    }

    #[test]
    fn overlaps_and_unions() {
        let u = union_of(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)]);
        assert_eq!(u, vec![(0, 20), (30, 40)]);
        assert_eq!(overlap_ns(&u, 15, 35), 10);
        assert_eq!(concurrent(&[(0, 10, 0), (5, 20, 1), (30, 40, 0)]), 5);
    }
}
