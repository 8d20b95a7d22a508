//! The thread-state stage of the analysis: each thread-state sample classified into a category by
//! its frames and system call (the rules are data: docs/state-rules.txt), then summed per thread,
//! per time slice, per stack. See docs/STATES.md.

use crate::profile::Profile;
use crate::profile::format::{THREAD_MAIN, THREAD_SIGNAL_BLOCKED};
use crate::profile::samples::{Sample, SampleKind, SamplingInfo};
use crate::symbols::code::CodeReader;
use crate::symbols::{Frame, Symbolizer, is_own_module, qualified_name, user_frame};
use crate::util::ratio;
use std::collections::{BTreeMap, HashMap};

pub use super::categories::*;
pub use super::state_rules::Rules;
pub(crate) use super::state_rules::glob;
use super::state_rules::rule_names;
pub use super::syscalls::signal_name;
pub(crate) use super::syscalls::{public_libc_name, syscall_name, waits_for_input};

mod classify;
mod timeline;
use classify::*;
use timeline::*;

// ---- classified samples, summed ----

/// A group of samples of one thread with the same frames and category.
#[derive(Debug, Clone, Default)]
pub struct StateSite {
    pub category: Category,
    pub frames: Vec<Frame>,
    /// The frame that decided the category (the lock or allocator function), if a frame did.
    pub decided_by: Option<usize>,
    pub user: usize,
    pub samples: u64,
    pub ns: u64,
    /// Lock waits: the locks its samples caught the lock word of (a futex call's word, or the
    /// fixed address of the atomic instruction sampled), most samples first (named by
    /// `locknames::name_site_locks`).
    pub locks: Vec<WaitedLock>,
}

/// A lock a lock-wait site's samples waited on (or woke), from the futex word's address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaitedLock {
    pub object: u64,
    /// Samples of the site that caught this address.
    pub samples: u64,
    pub ns: u64,
    /// `malloc's arena lock (main_arena)`, `the lock of stdout`, `random()'s lock`,
    /// `table_lock (named_locks)`, ..., or the address as a last resort.
    pub name: String,
    /// How it was named: `symbol`, `allocator`, `stdio`, `function` (a libc function with a
    /// private lock, without debug file), `libc-structure` (named by libc's code or data,
    /// src/symbols/libc_locks.rs), `init-site`, `libc-address` (a lock of libc that its
    /// debug file would name), `pthread` (a lock the pthread hooks took), `runtime` (a futex word
    /// of a runtime's lock, whose waits the lock list counts exactly) or `address`.
    pub how: &'static str,
}

impl StateSite {
    /// The lock most of its caught samples waited on, if any sample caught one.
    pub fn lock(&self) -> Option<&WaitedLock> {
        self.locks.first()
    }

    /// Samples that caught a lock's address.
    pub fn addressed_samples(&self) -> u64 {
        self.locks.iter().map(|l| l.samples).sum()
    }

    /// The function the user called that led here: the frame just inside the user frame
    /// (`random` for a lock taken inside random()), else the deciding frame.
    pub fn function(&self) -> String {
        let index = crate::symbols::called_frame(&self.frames, self.user)
            .unwrap_or_else(|| self.decided_by.unwrap_or(0));
        let Some(frame) = self.frames.get(index) else {
            return "?".to_string();
        };
        let Some(name) = frame.function.as_deref() else {
            return frame.display();
        };
        let q = qualified_name(name);
        let bare = q.split('(').next().unwrap_or(q);
        if frame.module.contains("libc.so") {
            public_libc_name(bare).to_string()
        } else {
            bare.to_string()
        }
    }

    pub fn user_frame(&self) -> Option<&Frame> {
        (self.user < self.frames.len()).then(|| &self.frames[self.user])
    }
}

#[derive(Debug, Clone, Default)]
pub struct ThreadStates {
    pub serial: u32,
    pub tid: u32,
    pub name: String,
    pub main: bool,
    /// Its life; for a folded group, its threads' lives summed.
    pub life_ns: u64,
    /// How many short threads the row stands for, when they were folded into one group.
    pub folded: Option<u32>,
    /// The thread blocked the sampling signal for part of its life: its running time then came
    /// from the kernel's CPU clock and counts as compute, unclassified.
    pub signal_blocked: bool,
    /// Estimated time per category (indexed by `Category::index`).
    pub ns: PerCategory<u64>,
    /// The part of `ns[Allocator]` from CPU samples: the allocator on a CPU. The rest is wall
    /// samples of the thread off a CPU inside the allocator (preempted, or asleep in a page fault
    /// or on the memory map's lock).
    pub allocator_on_cpu_ns: u64,
    /// The part of `ns[Lock]` from samples whose interval meets a lock wait the hooks recorded
    /// (and timed exactly): the rest is of locks no hook saw (the C library's own, a recorded
    /// wait lost to a full ring). The summary puts the exact time in place of this part.
    pub lock_in_recorded_ns: u64,
    /// That exact time: the length of the lock waits the hooks recorded.
    pub lock_recorded_ns: u64,
    pub samples: u64,
    /// Per time slice, the time of each category in it.
    pub slices: Vec<PerCategory<u64>>,
    /// Sample groups, most time first.
    pub sites: Vec<StateSite>,
    /// Stretches of one category, from the samples in time order: (begin, end, category), ns
    /// from the process's start. A sample stands for the interval just before it.
    pub runs: Vec<(u64, u64, Category)>,
    /// What the kernel says of the thread (schedstat, stat), when the profile has it: the
    /// samples' weights are then scaled to it (CPU samples to its time on a CPU, wall samples to
    /// its time asleep) and its run-queue delay is the `runnable` state.
    pub kernel: Option<KernelFigures>,
    /// Stretches asleep waiting for input from outside the process (poll, epoll, select,
    /// accept, reads of sockets and pipes, sleeps): (begin, end) ns from the process's start.
    pub input_waits: Vec<(u64, u64)>,
    /// Its CPU samples in time order: (end ns from the process's start, weight, index into
    /// `StateReport::stacks`), to tell which code ran in a stretch of time.
    pub cpu_marks: Vec<(u64, u64, u32)>,
}

/// A thread's figures from the kernel, summed over the sampler's looks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelFigures {
    /// Time on a CPU.
    pub exec_ns: u64,
    /// Time runnable, waiting for a CPU.
    pub run_delay_ns: u64,
    /// Time asleep (neither running nor runnable): life minus the two above.
    pub off_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
    /// System CPU time (clock-tick resolution).
    pub stime_ns: u64,
    /// System time in looks with page faults: the kernel's memory work for the thread.
    pub fault_stime_ns: u64,
    /// Times put on a CPU.
    pub switches: u64,
}

impl ThreadStates {
    /// Time in every state but blocked and runnable: what its samples saw while it ran or sat
    /// in a system call it made (the states a thread's CPU time and I/O are split into).
    pub fn awake_ns(&self) -> u64 {
        CATEGORIES
            .iter()
            .filter(|c| !matches!(c, Category::Blocked | Category::Runnable | Category::Idle))
            .fold(0u64, |a, c| a.saturating_add(self.ns[c.index()]))
    }

    /// Time doing the program's own work: computation, the allocator, the kernel's memory work
    /// and I/O. Not spinning, lock waits, contended atomics or a runtime's idle wait, which a
    /// thread spends on a CPU too (a thread that spun longer for a lock did no more work).
    pub fn work_ns(&self) -> u64 {
        [
            Category::Compute,
            Category::Allocator,
            Category::KernelMemory,
            Category::Io,
        ]
        .iter()
        .fold(0u64, |a, c| a.saturating_add(self.ns[c.index()]))
    }

    /// The share of the thread's life in category `c`.
    pub fn share(&self, c: Category) -> f64 {
        ratio(self.ns[c.index()], self.life_ns)
    }

    /// A site's time as a share of the thread's life.
    pub fn site_share(&self, site: &StateSite) -> f64 {
        ratio(site.ns, self.life_ns)
    }

    /// The time every sample of the thread stands for, all categories together.
    pub fn sampled_ns(&self) -> u64 {
        self.ns.iter().fold(0, |a, b| a.saturating_add(*b))
    }

    /// The thread's life that no sample or kernel figure stands for (without kernel figures:
    /// runnable, or after its last sample).
    pub fn unaccounted_ns(&self) -> u64 {
        self.life_ns.saturating_sub(self.sampled_ns())
    }

    pub fn top_sites(&self, c: Category, n: usize) -> impl Iterator<Item = &StateSite> {
        self.sites.iter().filter(move |s| s.category == c).take(n)
    }

    /// The sites the report lists for category `c` (the heaviest `SITES_PER_CATEGORY`).
    pub fn listed_sites(&self, c: Category) -> impl Iterator<Item = &StateSite> {
        self.top_sites(c, SITES_PER_CATEGORY)
    }

    /// Each slice's share of every category, as the report's timeline gives it.
    pub fn slice_shares(&self, slice_ns: u64) -> Vec<PerCategory<f64>> {
        self.slices
            .iter()
            .map(|s| s.map(|ns| rounded_share(ns, slice_ns)))
            .collect()
    }
}

/// A CPU hot spot over all threads: one function at the sampled instruction.
#[derive(Debug, Clone, Default)]
pub struct HotFunction {
    pub function: String,
    pub category: Category,
    pub frames: Vec<Frame>,
    pub user: usize,
    pub samples: u64,
    pub ns: u64,
}

/// One distinct sampled stack with its category: what every sample of that shape shows.
#[derive(Debug, Clone, Default)]
pub struct SampledStack {
    pub category: Category,
    /// Innermost first, the sampled instruction's frame(s) first.
    pub frames: Vec<Frame>,
    /// A CPU (or kernel-clock) sample: the thread was running.
    pub on_cpu: bool,
    /// A CPU sample inside an I/O call's wrapper (`write`, `fdatasync`): computation, done for
    /// that call (wait-for's "a lock held across I/O" counts it with the call's off-CPU time).
    pub in_io_call: bool,
}

/// Marks a sample of `StateReport::sample_stacks` that belongs to no known thread.
pub const NO_STACK: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub struct StateReport {
    pub sampling: SamplingInfo,
    /// The distinct classified stacks (the flame graphs' and sampled exports' frames).
    pub stacks: Vec<SampledStack>,
    /// Per sample of the profile (in `Profile::samples` order), the index of its stack in
    /// `stacks`, or `NO_STACK`: 4 bytes a sample, so every view can walk the samples in time.
    pub sample_stacks: Vec<u32>,
    pub slice_ns: u64,
    pub wall_ns: u64,
    pub cpus: u32,
    pub threads: Vec<ThreadStates>,
    pub hot: Vec<HotFunction>,
    /// The most program threads alive at once.
    pub peak_threads: usize,
}

impl StateReport {
    /// Sample `i` of the profile (in `Profile::samples` order) as it was classified: its stack's
    /// index in `stacks`, and the stack (category, frames, on a CPU or not). The one
    /// classification every view reads; None for a sample of no known thread.
    pub fn sample_stack(&self, i: usize) -> Option<(u32, &SampledStack)> {
        let &ci = self.sample_stacks.get(i)?;
        Some((ci, self.stacks.get(ci as usize)?))
    }

    /// The user frame where thread `ti` spent most CPU time in [begin, end) (ns from the
    /// process's start), with that time.
    pub fn top_user_frame(&self, ti: usize, begin: u64, end: u64) -> Option<(Frame, u64)> {
        self.top_user_frames(&[ti], begin, end).0.into_iter().next()
    }

    /// The user frames where threads `tis` spent their CPU time in [begin, end) (ns from the
    /// process's start), most first, each with its time; and the threads' CPU time there in
    /// all (stallscope's own work left out of both).
    pub fn top_user_frames(&self, tis: &[usize], begin: u64, end: u64) -> (Vec<(Frame, u64)>, u64) {
        let mut by_frame: HashMap<String, (Frame, u64)> = HashMap::new();
        let mut total = 0;
        for t in tis.iter().filter_map(|&ti| self.threads.get(ti)) {
            for &(at, w, shape) in &t.cpu_marks {
                if at < begin || at >= end {
                    continue;
                }
                let Some(frames) = self
                    .stacks
                    .get(shape as usize)
                    .filter(|s| s.category != Category::Profiler)
                    .map(|s| &s.frames)
                else {
                    continue;
                };
                total += w;
                let Some(f) = frames.get(user_frame(frames)) else {
                    continue;
                };
                let e = by_frame
                    .entry(f.display())
                    .or_insert_with(|| (f.clone(), 0));
                e.1 += w;
            }
        }
        let mut frames: Vec<(Frame, u64)> = by_frame.into_values().collect();
        frames.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then_with(|| a.0.display().cmp(&b.0.display()))
        });
        (frames, total)
    }
}

impl StateReport {
    /// Thread `ti`'s CPU time in [begin, end) (nanoseconds since the start), by its CPU samples:
    /// all of it, and the part that was stallscope's own work.
    pub fn cpu_in(&self, ti: usize, begin: u64, end: u64) -> (u64, u64) {
        let Some(t) = self.threads.get(ti) else {
            return (0, 0);
        };
        t.cpu_marks
            .iter()
            .filter(|&&(at, _, _)| at >= begin && at < end)
            .fold((0, 0), |(all, own), &(_, w, shape)| {
                let profiler = self
                    .stacks
                    .get(shape as usize)
                    .is_some_and(|s| s.category == Category::Profiler);
                (all + w, own + if profiler { w } else { 0 })
            })
    }

    /// Time in category `c`, over all threads.
    pub fn category_ns(&self, c: Category) -> u64 {
        self.threads
            .iter()
            .fold(0, |a, t| a.saturating_add(t.ns[c.index()]))
    }

    pub fn compute_ns(&self) -> u64 {
        self.category_ns(Category::Compute)
    }

    /// The threads that could have run at once: the peak of live threads, at most the CPUs.
    pub fn width(&self) -> usize {
        self.peak_threads.min(self.cpus.max(1) as usize).max(1)
    }

    /// Summed compute time over (wall time x the CPUs the threads could have used).
    pub fn parallel_efficiency(&self) -> f64 {
        ratio(self.compute_ns(), self.wall_ns as f64 * self.width() as f64).min(1.0)
    }
}

/// A slice's share of one category: at most 1, rounded to 1e-4 (the report's timeline).
pub fn rounded_share(ns: u64, slice_ns: u64) -> f64 {
    (ratio(ns, slice_ns).min(1.0) * 1e4).round() / 1e4
}

/// What to tell the user about how sampling ran, when there is something to tell.
pub fn sampling_note(s: &SamplingInfo) -> Option<String> {
    let mut notes = Vec::new();
    if let Some(from) = s.moved_from {
        match s.signal {
            Some(to) => notes.push(format!(
                "the program handles {}: CPU sampling stepped aside to {}",
                signal_name(from),
                signal_name(to)
            )),
            None => notes.push(format!(
                "the program handles {} and no free signal was left: no CPU samples",
                signal_name(from)
            )),
        }
    } else if s.no_signal {
        notes.push("no free signal for CPU sampling: no CPU samples".into());
    }
    if s.no_timers {
        notes.push("some threads' CPU timers could not be created".into());
    }
    if s.dropped > 0 {
        notes.push(format!("{} samples lost to full buffers", s.dropped));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

pub const TIMELINE_SLICES: usize = 100;

/// The run's clock: where the timeline starts and how long a slice is.
#[derive(Debug, Clone, Copy)]
struct Timeline {
    start_ns: u64,
    slice_ns: u64,
}

pub fn build(
    profile: &Profile,
    sym: &mut Symbolizer,
    code: &mut CodeReader,
    words: &super::futex::Words,
) -> Option<StateReport> {
    let sampling = profile.sampling.clone()?;
    let wall_ns = profile.wall_ns().max(1);
    let clock = Timeline {
        start_ns: profile.process.start_mono_ns,
        slice_ns: wall_ns.div_ceil(TIMELINE_SLICES as u64).max(1),
    };
    let mut threads = new_threads(profile);
    let index: HashMap<u32, usize> = threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();
    let scale = weight_scales(profile, &mut threads, &index);
    let mut classifier = Classifier {
        profile,
        sym,
        code,
        words,
        rules: Rules::builtin(),
        by_shape: HashMap::new(),
        stacks: Vec::new(),
    };
    let tallies = tally_samples(&mut classifier, &mut threads, &index, &scale, clock);
    let classified = classifier.stacks;
    let signs = &tallies.signs;
    add_kernel_states(
        profile,
        &mut threads,
        &index,
        signs,
        clock.start_ns,
        clock.slice_ns,
    );
    let recorded = tallies.lock_weight.iter().zip(&tallies.lock_recorded_ns);
    for (t, (&(all, met), &recorded_ns)) in threads.iter_mut().zip(recorded) {
        t.lock_recorded_ns = recorded_ns;
        // The kernel's figures have rescaled the lock time since: its met share is kept.
        let lock = t.ns[Category::Lock.index()];
        t.lock_in_recorded_ns = if all > 0 {
            (lock as u128 * met as u128 / all as u128) as u64
        } else {
            0
        };
    }
    let hot = merge_sites(tallies.groups, &classified, &mut threads, &index);
    for (t, list) in threads.iter_mut().zip(tallies.intervals) {
        t.sites
            .sort_by(|a, b| b.ns.cmp(&a.ns).then(b.samples.cmp(&a.samples)));
        t.runs = merge_runs(list);
    }
    let stacks = classified
        .into_iter()
        .map(|c| SampledStack {
            category: c.category,
            frames: c.frames,
            on_cpu: c.on_cpu,
            in_io_call: c.in_io_call,
        })
        .collect();
    Some(StateReport {
        sampling,
        stacks,
        sample_stacks: tallies.sample_stacks,
        slice_ns: clock.slice_ns,
        wall_ns,
        cpus: profile.process.ncpus,
        peak_threads: peak_threads(profile),
        threads,
        hot,
    })
}

/// One row per thread of the profile (in its order), with no sample yet.
fn new_threads(profile: &Profile) -> Vec<ThreadStates> {
    profile
        .threads
        .iter()
        .map(|t| ThreadStates {
            serial: t.serial,
            tid: t.tid,
            name: t.name.clone(),
            main: t.flags & THREAD_MAIN != 0,
            life_ns: t.life_ns(profile.thread_end_ns(t)),
            folded: t.folded.map(|f| f.threads),
            signal_blocked: t.flags & THREAD_SIGNAL_BLOCKED != 0,
            slices: vec![[0; CATEGORY_COUNT]; TIMELINE_SLICES],
            ..ThreadStates::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Frame {
        Frame {
            function: Some(name.to_string()),
            file: None,
            line: None,
            module: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            offset: 0,
            inlined: false,
        }
    }

    #[test]
    fn a_sample_meets_a_recorded_wait_where_their_intervals_overlap() {
        let waits = vec![(100, 200), (150, 160), (300, 400)];
        let recorded = RecordedLockWaits {
            max_end: vec![vec![200, 200, 400], vec![]],
            waits: vec![waits, vec![]],
            total_ns: vec![210, 0],
        };
        assert!(recorded.meets(0, 50, 101)); // reaches into the first
        assert!(recorded.meets(0, 190, 250)); // starts in it
        assert!(recorded.meets(0, 170, 180)); // past the nested one's end, in the longer one
        assert!(recorded.meets(0, 350, 360));
        assert!(!recorded.meets(0, 200, 300)); // between, touching neither's inside
        assert!(!recorded.meets(0, 0, 100));
        assert!(!recorded.meets(0, 400, 500));
        assert!(!recorded.meets(1, 0, 1000)); // a thread with none
    }

    #[test]
    fn the_rules_file_parses_and_knows_every_category() {
        let rules = Rules::builtin();
        for c in CATEGORIES {
            if matches!(
                c,
                Category::Compute
                    | Category::Atomic
                    | Category::Runnable
                    | Category::Profiler
                    | Category::Idle
            ) {
                continue; // decided by default, by the instruction, by the kernel's figures, by the interposer's frames or by runtime_waits.json
            }
            assert!(rules.rules.iter().any(|r| r.category == c), "{c:?}");
        }
        assert!(Rules::parse("lock function").is_err());
        assert!(Rules::parse("nothing function x").is_err());
        assert!(Rules::parse("lock somehow x").is_err());
    }

    #[test]
    fn libc_names_read_as_their_public_functions() {
        assert_eq!(public_libc_name("__random"), "random");
        assert_eq!(public_libc_name("__GI___libc_write"), "write");
        assert_eq!(public_libc_name("_IO_fwrite"), "_IO_fwrite");
        assert_eq!(public_libc_name("__libc_malloc2"), "malloc", "glibc 2.42");
        assert_eq!(public_libc_name("__libc_calloc2"), "calloc");
        assert_eq!(public_libc_name("__memcpy_avx2"), "memcpy_avx2");
        assert_eq!(public_libc_name("fprintf"), "fprintf");
        assert_eq!(public_libc_name("__"), "__");
        assert_eq!(
            public_libc_name("___pthread_mutex_lock"),
            "pthread_mutex_lock"
        );
    }

    #[test]
    fn globs() {
        assert!(glob("__lll_lock_wait*", "__lll_lock_wait_private"));
        assert!(glob("*pthread_mutex_lock*", "___pthread_mutex_lock"));
        assert!(glob("*poll", "__poll"));
        assert!(!glob("*poll", "poll_thing"));
        assert!(glob("malloc", "malloc"));
        assert!(!glob("malloc", "malloc_consolidate"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "ac"));
        assert!(glob("*", "") && glob("a**b", "ab") && glob("*lock*", "xlocky"));
        assert!(!glob("ab*ba", "aba"));
    }

    #[test]
    fn the_innermost_matching_frame_decides() {
        let rules = Rules::builtin();
        // A heap lock taken inside malloc called from fprintf: waiting on a lock.
        let frames = [
            frame("__lll_lock_wait_private"),
            frame("malloc"),
            frame("vfprintf"),
            frame("worker"),
        ];
        assert_eq!(
            rules.classify(&frames, SampleKind::Cpu, None, None, false),
            (Category::Lock, Some(0))
        );
        let frames = [frame("_int_free"), frame("free"), frame("worker")];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Cpu, None, None, false)
                .0,
            Category::Allocator
        );
        // A condition wait re-taking its mutex is a lock wait; the wait itself is not.
        let frames = [
            frame("__futex_abstimed_wait_common"),
            frame("__pthread_cond_wait_common"),
            frame("worker"),
        ];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Wall, Some("futex"), None, false)
                .0,
            Category::Blocked
        );
        assert_eq!(
            rules.atomic("/usr/lib/x86_64-linux-gnu/libc.so.6"),
            Category::Lock
        );
        assert_eq!(rules.atomic("/tmp/program"), Category::Atomic);
        let frames = [frame("compute_things"), frame("main")];
        assert_eq!(
            rules.classify(&frames, SampleKind::Cpu, None, None, false),
            (Category::Compute, None)
        );
    }

    #[test]
    fn wall_samples_fall_back_on_the_system_call() {
        let rules = Rules::builtin();
        let frames = [frame("unknown_function")];
        let by = |name: &str| {
            rules
                .classify(&frames, SampleKind::Wall, Some(name), None, false)
                .0
        };
        assert_eq!(by("futex-wait"), Category::Lock);
        assert_eq!(by("futex"), Category::Blocked);
        assert_eq!(by("read"), Category::Blocked);
        assert_eq!(by("nanosleep"), Category::Blocked);
        assert_eq!(by("munmap"), Category::KernelMemory);
        assert_eq!(by("none"), Category::KernelMemory);
        assert_eq!(by("fsync"), Category::Io);
        assert_eq!(syscall_name(202, 128), "futex-wait");
        assert_eq!(syscall_name(202, 137), "futex");
        assert_eq!(syscall_name(999, 0), "syscall_999");
        // `read` on a CPU sample is CPU work (the kernel copying); on a wall sample, waiting
        // for input.
        let frames = [frame("read"), frame("main")];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Cpu, None, None, false)
                .0,
            Category::Compute
        );
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Wall, Some("read"), None, false)
                .0,
            Category::Blocked
        );
    }

    #[test]
    fn a_user_function_named_like_a_wait_is_never_one() {
        let rules = Rules::builtin();
        // MariaDB's mysql_select and a C loop in table_select: computation on a CPU, and off
        // it whatever its system call says.
        for name in [
            "table_select",
            "mysql_select",
            "handle_poll",
            "my_pthread_mutex_lock_wrapper",
        ] {
            let frames = [frame(name), frame("main")];
            assert_eq!(
                rules
                    .classify(&frames, SampleKind::Cpu, None, None, false)
                    .0,
                Category::Compute,
                "{name}"
            );
            assert_eq!(
                rules
                    .classify(&frames, SampleKind::Wall, Some("read"), None, false)
                    .0,
                Category::Blocked,
                "{name}"
            );
        }
        // A CPU sample inside a wait function's own code is work, never blocked.
        let frames = [frame("__pthread_cond_wait_common"), frame("worker")];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Cpu, None, None, false)
                .0,
            Category::Compute
        );
        // A stale allocator frame on a scanned stack cannot make a futex sleep allocator time.
        let frames = [frame("syscall"), frame("malloc"), frame("main")];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Wall, Some("futex"), None, false)
                .0,
            Category::Blocked
        );
    }

    #[test]
    fn futex_words_and_runtime_entry_points_decide_futex_sleeps() {
        use crate::analysis::futex::Word;
        use crate::analysis::runtime::Role;
        let rules = Rules::builtin();
        let rust_lock = [
            frame("std::sys::pal::unix::futex::futex_wait"),
            frame("<std::sys::sync::mutex::futex::Mutex>::lock_contended"),
            frame("app::record_hit"),
        ];
        assert_eq!(
            rules
                .classify(&rust_lock, SampleKind::Wall, Some("futex"), None, false)
                .0,
            Category::Lock
        );
        // On a CPU, spinning for that lock is waiting for it too.
        assert_eq!(
            rules
                .classify(&rust_lock, SampleKind::Cpu, None, None, false)
                .0,
            Category::Lock
        );
        // An entry point every acquisition calls is a wait on a CPU only where the thread spins
        // or goes to sleep: elsewhere it is the acquisition's own work.
        let omp = [frame("omp_set_lock"), frame("main")];
        assert_eq!(
            rules.classify(&omp, SampleKind::Cpu, None, None, true).0,
            Category::Lock
        );
        assert_eq!(
            rules.classify(&omp, SampleKind::Cpu, None, None, false).0,
            Category::Compute
        );
        let idle = [
            frame("sched_yield"),
            frame("rayon_core::sleep::Sleep::no_work_found"),
            frame("rayon_core::registry::WorkerThread::wait_until_cold"),
        ];
        assert_eq!(
            rules.classify(&idle, SampleKind::Cpu, None, None, false).0,
            Category::Idle
        );
        // A word the interposer classified decides, whatever the scanned stack shows.
        let word = Word {
            role: Role::Lock,
            runtime: String::new(),
            object: "futex word".into(),
        };
        let frames = [frame("syscall"), frame("futex_lock"), frame("main")];
        assert_eq!(
            rules
                .classify(&frames, SampleKind::Wall, Some("futex"), Some(&word), false)
                .0,
            Category::Lock
        );
    }

    #[test]
    fn runs_merge_same_category_neighbours_and_never_overlap() {
        let runs = merge_runs(vec![
            (0, 10, Category::Compute),
            (10, 20, Category::Compute),
            (15, 30, Category::Lock),
            (1_000_000_000, 1_000_000_010, Category::Compute),
        ]);
        assert_eq!(
            runs,
            vec![
                (0, 20, Category::Compute),
                (20, 30, Category::Lock),
                (1_000_000_000, 1_000_000_010, Category::Compute)
            ]
        );
    }

    #[test]
    fn spread_splits_an_interval_over_slices() {
        let mut slices = vec![[0u64; CATEGORY_COUNT]; 4];
        spread(&mut slices, 1000, 10, 1025, 20, Category::Lock);
        assert_eq!(slices[0][Category::Lock.index()], 5);
        assert_eq!(slices[1][Category::Lock.index()], 10);
        assert_eq!(slices[2][Category::Lock.index()], 5);
        // Before the start: clipped, never out of bounds.
        spread(&mut slices, 1000, 10, 999, 50, Category::Io);
        spread(&mut slices, 1000, 10, 5000, 50, Category::Io);
        assert!(slices.iter().all(|s| s[Category::Io.index()] <= 50));
    }
}
