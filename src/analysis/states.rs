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
        let t = self.threads.get(ti)?;
        let mut by_frame: HashMap<String, (Frame, u64)> = HashMap::new();
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
            let Some(f) = frames.get(user_frame(frames)) else {
                continue;
            };
            let e = by_frame
                .entry(f.display())
                .or_insert_with(|| (f.clone(), 0));
            e.1 += w;
        }
        by_frame.into_values().max_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| b.0.display().cmp(&a.0.display()))
        })
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

/// Adds `ns` of category `c` over the interval [end - ns, end) to the slices it overlaps.
fn spread(
    slices: &mut [PerCategory<u64>],
    start: u64,
    slice_ns: u64,
    end: u64,
    ns: u64,
    c: Category,
) {
    let begin = end.saturating_sub(ns).max(start);
    let end = end.max(begin);
    if slice_ns == 0 || slices.is_empty() {
        return;
    }
    let mut t = begin;
    while t < end {
        let i = ((t - start) / slice_ns) as usize;
        if i >= slices.len() {
            break;
        }
        let slice_end = start.saturating_add((i as u64 + 1).saturating_mul(slice_ns));
        let part = end.min(slice_end) - t;
        if part == 0 {
            break; // the last slice ends at u64::MAX: nothing lies beyond it
        }
        slices[i][c.index()] = slices[i][c.index()].saturating_add(part);
        t += part;
    }
    if begin == end && ns > 0 {
        let i = (((begin - start) / slice_ns) as usize).min(slices.len() - 1);
        slices[i][c.index()] = slices[i][c.index()].saturating_add(ns);
    }
}

/// The frames of a sample: the instruction's (exact pc) then its callers'. Words scanned from a
/// blocked thread's stack count only where they follow a call instruction.
pub(crate) fn sample_frames(
    profile: &Profile,
    sym: &mut Symbolizer,
    code: &mut CodeReader,
    s: &Sample,
) -> Vec<Frame> {
    let mut frames = if s.pc != 0 {
        sym.address(s.pc, s.mono_ns)
    } else {
        Vec::new()
    };
    let Some(stack) = s.stack.and_then(|id| profile.stacks.get(&id)) else {
        return frames;
    };
    match s.kind {
        SampleKind::Kernel => {}
        SampleKind::Cpu => return sym.stack_below(frames, stack),
        SampleKind::Wall => {
            // The scan's first word is the pc itself.
            for &ret in stack.pcs.iter().skip(1) {
                if code.follows_call(&profile.modules, ret) {
                    frames.extend(sym.address(ret - 1, s.mono_ns));
                }
            }
            return sym.with_python(frames, stack);
        }
    }
    frames
}

/// glibc's low-level lock slow paths (`__lll_lock_wait_private(int *futex)` and kin) are leaves
/// that keep their first argument, the futex word's address, in RDI from entry to return
/// (glibc 2.36's code, checked by disassembly): a CPU sample anywhere in them caught the lock.
fn holds_futex_in_rdi(f: &Frame) -> bool {
    f.function.as_deref().is_some_and(|name| {
        let name = name.strip_prefix("__GI_").unwrap_or(name);
        matches!(
            name,
            "__lll_lock_wait_private"
                | "__lll_lock_wait"
                | "__lll_lock_wake_private"
                | "__lll_lock_wake"
        )
    })
}

/// Where a lock-wait sample's lock word comes from.
#[derive(Debug, Clone, Copy)]
enum LockWord {
    None,
    /// The sample's `object`: a futex call's first argument.
    Sample,
    /// The fixed address of the atomic instruction it was sampled at (a static lock word).
    Fixed(u64),
}

/// x86-64's futex system call: a wall sample in it has the futex word's address as `object`.
const FUTEX: u32 = 202;

/// What classifies a sample: every sample of one shape gets one category. The futex word's role
/// is part of it: two sleeps at one stack, one on a lock's word and one on a condition's, are a
/// lock wait and a blocked wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Shape {
    kind: SampleKind,
    pc: u64,
    stack: Option<u32>,
    syscall: Option<u32>,
    /// The futex operation (0 outside futex calls).
    op: u32,
    role: Option<super::runtime::Role>,
    /// A CPU sample in a pthread lock call that met none of its thread's recorded lock waits
    /// (`Classifier::unwaited`), in a thread that takes only its own locks or shares one.
    unwaited: Option<Sharing>,
}

/// Whether a thread takes only locks no other thread takes (a lock call's atomic instruction then
/// finds the lock word's cache line in its own CPU's cache), or shares one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Sharing {
    Own,
    Shared,
}

/// Per thread (index into `profile.threads`): whether it takes a pthread lock another thread
/// takes too (or one its table could not keep apart: the overflow entry, a folded group's).
fn lock_sharing(profile: &Profile) -> Vec<Sharing> {
    // A lock appears once per kind of use in a thread's table (a read-write lock's reads and
    // writes): counted once per thread, or per folded group's threads.
    let mut takers: HashMap<u64, u32> = HashMap::new();
    for t in &profile.threads {
        let mut own: HashMap<u64, u32> = HashMap::new();
        for l in &t.locks {
            let n = own.entry(l.address).or_default();
            *n = (*n).max(l.threads.max(1));
        }
        for (address, n) in own {
            *takers.entry(address).or_default() += n;
        }
    }
    profile
        .threads
        .iter()
        .map(|t| {
            let shared = t
                .locks
                .iter()
                .any(|l| l.address == 0 || takers[&l.address] > 1);
            if shared {
                Sharing::Shared
            } else {
                Sharing::Own
            }
        })
        .collect()
}

/// The pthread lock functions whose every call the interposer's hooks see, and record as a wait
/// when it waited: a CPU sample in one outside its thread's recorded waits is the call's own
/// work (its atomic instruction on the lock word), not a wait. (`pthread_spin_lock` and
/// `pthread_spin_trylock` are not here: a sample in them is `spinning` by the state rules.)
const HOOKED_LOCK_FUNCTIONS: &[&str] = &[
    "pthread_mutex_lock",
    "pthread_mutex_trylock",
    "pthread_mutex_timedlock",
    "pthread_mutex_clocklock",
    "pthread_mutex_unlock",
    "pthread_rwlock_rdlock",
    "pthread_rwlock_tryrdlock",
    "pthread_rwlock_timedrdlock",
    "pthread_rwlock_clockrdlock",
    "pthread_rwlock_wrlock",
    "pthread_rwlock_trywrlock",
    "pthread_rwlock_timedwrlock",
    "pthread_rwlock_clockwrlock",
    "pthread_rwlock_unlock",
    "pthread_spin_unlock",
];

/// A shape within one thread (by serial).
type GroupKey = (u32, Shape);
/// A thread's merged site: (thread index, category, function, user frame).
type SiteKey = (usize, Category, String, String);

/// Samples and the time they stand for.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    samples: u64,
    ns: u64,
}

impl Tally {
    fn add(&mut self, samples: u64, ns: u64) {
        self.samples = self.samples.saturating_add(samples);
        self.ns = self.ns.saturating_add(ns);
    }
}

/// One distinct shape, classified once: what every sample of that shape is.
#[derive(Debug, Clone)]
struct ClassifiedStack {
    category: Category,
    frames: Vec<Frame>,
    /// The frame that decided the category.
    decided_by: Option<usize>,
    on_cpu: bool,
    /// A CPU sample decided by an I/O call's wrapper.
    in_io_call: bool,
    /// A CPU sample at or just after a `syscall` instruction: the thread was in a system call.
    in_syscall: bool,
    /// A spinning sample decided by a yielding function (`sched_yield`).
    yielding: bool,
    /// Where its samples' lock word comes from.
    lock_word: LockWord,
    /// A lock sample on a CPU decided by a pthread lock function the hooks see (HOOKED_LOCK_FUNCTIONS).
    in_hooked_lock_call: bool,
}

/// The one classification of thread-state samples: each distinct shape classified once, by its
/// frames, system call, futex word and instruction (docs/STATES.md, "How samples are
/// classified"). Every view reads its result (`StateReport::stacks`, `sample_stacks`).
struct Classifier<'a, 's> {
    profile: &'a Profile,
    sym: &'a mut Symbolizer<'s>,
    code: &'a mut CodeReader,
    words: &'a super::futex::Words,
    rules: Rules,
    by_shape: HashMap<Shape, usize>,
    stacks: Vec<ClassifiedStack>,
}

impl Classifier<'_, '_> {
    /// The futex word's role, for a wall sample in a futex call on a word the interposer saw.
    fn word(&self, s: &Sample) -> Option<&super::futex::Word> {
        (s.kind == SampleKind::Wall && s.syscall == Some(FUTEX))
            .then(|| self.words.get(s.object))
            .flatten()
    }

    fn shape(&self, s: &Sample) -> Shape {
        Shape {
            kind: s.kind,
            pc: s.pc,
            stack: s.stack,
            syscall: s.syscall,
            op: if s.syscall == Some(FUTEX) { s.arg } else { 0 },
            role: self.word(s).map(|w| w.role),
            unwaited: None,
        }
    }

    /// The stack of a sample of `shape` (classified `i`) in a hooked pthread lock call that met no
    /// recorded wait of its thread: the call's own work, which the hooks saw not wait (their
    /// uncontended step, or glibc's fast path), never a lock wait. At or just after a locked
    /// instruction in a thread that shares a lock with others it is atomic (the lock word's cache
    /// line comes from another CPU); else computation: an uncontended atomic instruction costs
    /// the same with one thread as with many, and a thread that takes only its own locks has no
    /// other taker to wait for the line (its false sharing with other data is not seen here).
    fn unwaited(&mut self, shape: Shape, i: usize, s: &Sample, sharing: Sharing) -> (Shape, usize) {
        let shape = Shape {
            unwaited: Some(sharing),
            ..shape
        };
        if let Some(&j) = self.by_shape.get(&shape) {
            return (shape, j);
        }
        let atomic =
            sharing == Sharing::Shared && self.code.at_or_after_atomic(&self.profile.modules, s.pc);
        let stack = ClassifiedStack {
            category: if atomic {
                Category::Atomic
            } else {
                Category::Compute
            },
            lock_word: LockWord::None,
            in_hooked_lock_call: false,
            ..self.stacks[i].clone()
        };
        self.stacks.push(stack);
        let j = self.stacks.len() - 1;
        self.by_shape.insert(shape, j);
        (shape, j)
    }

    /// The index of sample `s`'s classified stack (classifying its shape the first time).
    fn stack_of(&mut self, s: &Sample) -> (Shape, usize) {
        let shape = self.shape(s);
        if let Some(&i) = self.by_shape.get(&shape) {
            return (shape, i);
        }
        let stack = self.classify(s);
        self.stacks.push(stack);
        let i = self.stacks.len() - 1;
        self.by_shape.insert(shape, i);
        (shape, i)
    }

    fn classify(&mut self, s: &Sample) -> ClassifiedStack {
        let (profile, rules) = (self.profile, &self.rules);
        let frames = sample_frames(profile, self.sym, self.code, s);
        let syscall = s.syscall.map(|nr| syscall_name(nr, s.arg));
        // Where a CPU sample's instruction is: in a pause loop, at a system call.
        let on_cpu = s.kind == SampleKind::Cpu;
        let in_pause_loop = on_cpu
            && (self.code.in_pause_loop(&profile.modules, s.pc)
                || self.code.in_polling_loop(&profile.modules, s.pc));
        let in_syscall = on_cpu && self.code.at_or_after_syscall(&profile.modules, s.pc);
        let (mut category, decided) = rules.classify(
            &frames,
            s.kind,
            syscall.as_deref(),
            self.word(s),
            in_pause_loop || in_syscall,
        );
        if category == Category::Compute && in_pause_loop {
            category = Category::Spinning;
        } else if category == Category::Compute
            && self.code.at_or_after_atomic(&profile.modules, s.pc)
        {
            category = rules.atomic(frames.first().map_or("", |f| f.module.as_str()));
        }
        // A TBB mutex that reports through ITT (built with TBB_USE_PROFILING_TOOLS) is a known
        // lock: its acquisition's spinning and yielding is waiting for it, counted once, as lock
        // (docs/STATES.md, "TBB through ITT").
        if self.words.itt_tbb_locks
            && s.kind == SampleKind::Cpu
            && matches!(category, Category::Spinning | Category::Compute)
            && super::futex::in_tbb_acquisition(&frames)
        {
            category = Category::Lock;
        }
        let deciding = decided.and_then(|i| frames.get(i));
        let in_io_call = s.kind == SampleKind::Cpu
            && deciding.is_some_and(|f| rules.by_frame(f) == Some(Category::Io));
        let yielding = category == Category::Spinning
            && deciding
                .and_then(|f| f.function.as_deref())
                .is_some_and(|f| f.contains("yield"));
        let lock_word = self.lock_word(s, category, &frames, deciding);
        let in_hooked_lock_call = s.kind == SampleKind::Cpu
            && category == Category::Lock
            && deciding
                .and_then(|f| f.function.as_deref())
                .is_some_and(|n| HOOKED_LOCK_FUNCTIONS.contains(&rule_names(n).1));
        ClassifiedStack {
            category,
            frames,
            decided_by: decided,
            on_cpu: s.kind != SampleKind::Wall,
            in_io_call,
            in_syscall,
            yielding,
            lock_word,
            in_hooked_lock_call,
        }
    }

    /// Where a sample of a lock wait has its lock word, if anywhere.
    fn lock_word(
        &mut self,
        s: &Sample,
        category: Category,
        frames: &[Frame],
        deciding: Option<&Frame>,
    ) -> LockWord {
        let modules = &self.profile.modules;
        let in_runtime = deciding
            .and_then(|f| f.function.as_deref())
            .is_some_and(|n| super::runtime::entry_for(n).is_some());
        match s.kind {
            _ if category != Category::Lock => LockWord::None,
            // A CPU sample spinning in a runtime's lock: its registers hold no futex word.
            SampleKind::Cpu if in_runtime => LockWord::None,
            SampleKind::Wall if s.syscall == Some(FUTEX) => LockWord::Sample,
            SampleKind::Cpu
                if self.code.at_or_after_syscall(modules, s.pc)
                    || frames.first().is_some_and(holds_futex_in_rdi) =>
            {
                LockWord::Sample
            }
            // Not the interposer's own atomics (its bookkeeping on its own words).
            SampleKind::Cpu if frames.first().is_some_and(|f| is_own_module(&f.module)) => {
                LockWord::None
            }
            SampleKind::Cpu => self
                .code
                .atomic_target(modules, s.pc)
                .map_or(LockWord::None, LockWord::Fixed),
            _ => LockWord::None,
        }
    }
}

/// The samples of one shape in one thread.
#[derive(Debug, Clone, Default)]
struct Group {
    category: Category,
    /// Index into the classified stacks.
    stack: usize,
    tally: Tally,
    /// The lock words its lock-wait samples caught.
    objects: HashMap<u64, Tally>,
}

/// What the per-sample pass sums besides the threads' own figures.
struct Tallies {
    groups: HashMap<GroupKey, Group>,
    /// Per thread: stretches of one category, unmerged.
    intervals: Vec<Vec<(u64, u64, Category)>>,
    /// Per sample of the profile: its classified stack, or `NO_STACK`.
    sample_stacks: Vec<u32>,
    signs: KernelSigns,
    /// Per thread: the weight of its lock samples, and of those that meet a recorded lock wait.
    lock_weight: Vec<(u64, u64)>,
    /// Per thread: the recorded lock waits' length.
    lock_recorded_ns: Vec<u64>,
}

/// Per thread: what the kernel's figures are read against (`add_kernel_states`).
struct KernelSigns {
    /// Spinning time in yielding functions.
    yield_ns: Vec<u64>,
    /// Wall samples taken.
    wall_seen: Vec<u64>,
    /// CPU samples inside an I/O call's wrapper (the kernel's work for it).
    io_call_ns: Vec<u64>,
    /// Other CPU samples in a system call (a futex wait or wake, any call not already counted as
    /// I/O or kernel memory work): the kernel's work for it, not page faults.
    syscall_ns: Vec<u64>,
}

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

/// Each sample, in the profile's order: classified (once per shape), then added to its thread's
/// time, timeline and marks, and to its group (with the lock word it caught).
fn tally_samples(
    classifier: &mut Classifier<'_, '_>,
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
    scale: &[WeightScale],
    clock: Timeline,
) -> Tallies {
    let profile = classifier.profile;
    let n = threads.len();
    let mut out = Tallies {
        groups: HashMap::new(),
        intervals: vec![Vec::new(); n],
        sample_stacks: Vec::with_capacity(profile.samples.len()),
        signs: KernelSigns {
            yield_ns: vec![0; n],
            wall_seen: vec![0; n],
            io_call_ns: vec![0; n],
            syscall_ns: vec![0; n],
        },
        lock_weight: vec![(0, 0); n],
        lock_recorded_ns: Vec::new(),
    };
    let recorded = RecordedLockWaits::new(profile, classifier.words, index, n, clock.start_ns);
    let sharing = lock_sharing(profile);
    let total = profile.samples.len();
    for (i, s) in profile.samples.iter().enumerate() {
        classifier.sym.progress(i, total);
        let Some(&ti) = index.get(&s.serial) else {
            out.sample_stacks.push(NO_STACK);
            continue;
        };
        let (mut shape, mut ci) = classifier.stack_of(s);
        let end = s.mono_ns.saturating_sub(clock.start_ns);
        // Every wait of a hooked lock call is recorded (unless some were lost to a full ring):
        // a CPU sample in one that meets none did not wait.
        if classifier.stacks[ci].in_hooked_lock_call
            && profile.waits_dropped == 0
            && !recorded.meets(ti, end.saturating_sub(s.weight_ns), end)
        {
            (shape, ci) = classifier.unwaited(shape, ci, s, sharing[ti]);
        }
        let stack = &classifier.stacks[ci];
        let category = stack.category;
        out.sample_stacks
            .push(u32::try_from(ci).unwrap_or(NO_STACK));
        out.intervals[ti].push((end.saturating_sub(s.weight_ns), end, category));
        let weight = scale[ti].weight(s);
        if category == Category::Lock {
            let (all, met) = &mut out.lock_weight[ti];
            *all = all.saturating_add(weight);
            if recorded.meets(ti, end.saturating_sub(s.weight_ns), end) {
                *met = met.saturating_add(weight);
            }
        }
        let signs = &mut out.signs;
        if stack.yielding {
            signs.yield_ns[ti] = signs.yield_ns[ti].saturating_add(weight);
        }
        if stack.in_io_call {
            signs.io_call_ns[ti] = signs.io_call_ns[ti].saturating_add(weight);
        } else if stack.in_syscall
            && !stack.yielding
            && !matches!(category, Category::KernelMemory | Category::Io)
        {
            signs.syscall_ns[ti] = signs.syscall_ns[ti].saturating_add(weight);
        }
        if s.kind == SampleKind::Wall {
            signs.wall_seen[ti] += 1;
        }
        add_to_thread(&mut threads[ti], s, ci, category, weight, clock);
        let g = out
            .groups
            .entry((s.serial, shape))
            .or_insert_with(|| Group {
                category,
                stack: ci,
                ..Group::default()
            });
        g.tally.add(1, weight);
        let word = match stack.lock_word {
            LockWord::None => 0,
            LockWord::Sample => s.object,
            LockWord::Fixed(address) => address,
        };
        if is_lock_word(profile, word) {
            g.objects.entry(word).or_default().add(1, weight);
        }
    }
    out.lock_recorded_ns = recorded.total_ns;
    out
}

/// Per thread, the lock waits the hooks recorded (ns from the process's start), to tell a lock
/// sample the hooks timed from one they did not see.
struct RecordedLockWaits {
    /// Per thread: (begin, end) sorted by begin, and the largest end up to each.
    waits: Vec<Vec<(u64, u64)>>,
    max_end: Vec<Vec<u64>>,
    /// Per thread: the waits' length.
    total_ns: Vec<u64>,
}

impl RecordedLockWaits {
    fn new(
        profile: &Profile,
        words: &super::futex::Words,
        index: &HashMap<u32, usize>,
        n: usize,
        start_ns: u64,
    ) -> Self {
        let mut waits = vec![Vec::new(); n];
        let mut total_ns = vec![0u64; n];
        for w in &profile.waits {
            if !words.is_timed_lock_wait(w) {
                continue;
            }
            if let Some(&ti) = index.get(&w.serial) {
                total_ns[ti] =
                    total_ns[ti].saturating_add(w.end_mono_ns.saturating_sub(w.start_mono_ns));
                waits[ti].push((
                    w.start_mono_ns.saturating_sub(start_ns),
                    w.end_mono_ns.saturating_sub(start_ns),
                ));
            }
        }
        let max_end = waits
            .iter_mut()
            .map(|list: &mut Vec<(u64, u64)>| {
                list.sort_unstable();
                list.iter()
                    .scan(0u64, |m, &(_, end)| {
                        *m = (*m).max(end);
                        Some(*m)
                    })
                    .collect()
            })
            .collect();
        RecordedLockWaits {
            waits,
            max_end,
            total_ns,
        }
    }

    /// Whether [begin, end) meets a recorded wait of thread `ti`.
    fn meets(&self, ti: usize, begin: u64, end: u64) -> bool {
        let before_end = self.waits[ti].partition_point(|w| w.0 < end);
        before_end > 0 && self.max_end[ti][before_end - 1] > begin
    }
}

/// A lock word is a 4-byte aligned user address, and not one of the interposer's own words (its
/// wait for the flusher at exit).
fn is_lock_word(profile: &Profile, word: u64) -> bool {
    word >= 0x1000
        && word.is_multiple_of(4)
        && !profile
            .modules
            .iter()
            .rfind(|m| m.lo <= word && word < m.hi)
            .is_some_and(|m| is_own_module(&m.path))
}

/// Adds one classified sample of weight `weight` to its thread.
fn add_to_thread(
    t: &mut ThreadStates,
    s: &Sample,
    stack: usize,
    category: Category,
    weight: u64,
    clock: Timeline,
) {
    let end = s.mono_ns.saturating_sub(clock.start_ns);
    match s.kind {
        SampleKind::Cpu => {
            t.cpu_marks.push((end, weight, stack as u32));
            if category == Category::Allocator {
                t.allocator_on_cpu_ns = t.allocator_on_cpu_ns.saturating_add(weight);
            }
        }
        SampleKind::Wall
            if s.syscall
                .is_some_and(|nr| waits_for_input(&syscall_name(nr, s.arg))) =>
        {
            t.input_waits.push((end.saturating_sub(weight), end));
        }
        _ => {}
    }
    t.ns[category.index()] = t.ns[category.index()].saturating_add(weight);
    t.samples += 1;
    spread(
        &mut t.slices,
        clock.start_ns,
        clock.slice_ns,
        s.mono_ns,
        weight,
        category,
    );
}

/// Per thread, the sample groups merged into sites by (category, function, user frame), with the
/// lock words they caught; over all threads, the CPU samples merged into hot functions (the 20
/// heaviest). In a fixed order, heaviest first, so that each merged site and hot function shows
/// the frames of its heaviest stack and equal weights are listed the same way every time.
fn merge_sites(
    groups: HashMap<GroupKey, Group>,
    classified: &[ClassifiedStack],
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
) -> Vec<HotFunction> {
    let mut groups: Vec<(GroupKey, Group)> = groups.into_iter().collect();
    groups.sort_by(|a, b| {
        (b.1.tally.ns, b.1.tally.samples)
            .cmp(&(a.1.tally.ns, a.1.tally.samples))
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut merged: BTreeMap<SiteKey, StateSite> = BTreeMap::new();
    let mut hot: BTreeMap<(String, Category), HotFunction> = BTreeMap::new();
    let mut merged_objects: BTreeMap<SiteKey, HashMap<u64, Tally>> = BTreeMap::new();
    for ((serial, shape), g) in &groups {
        let stack = &classified[g.stack];
        let site = StateSite {
            category: g.category,
            frames: stack.frames.clone(),
            decided_by: stack.decided_by,
            user: user_frame(&stack.frames),
            ..StateSite::default()
        };
        let key_user = site.user_frame().map(Frame::display).unwrap_or_default();
        let key = (index[serial], g.category, site.function(), key_user);
        if !g.objects.is_empty() {
            let all = merged_objects.entry(key.clone()).or_default();
            for (&object, t) in &g.objects {
                all.entry(object).or_default().add(t.samples, t.ns);
            }
        }
        let entry = merged.entry(key).or_insert(site);
        entry.samples = entry.samples.saturating_add(g.tally.samples);
        entry.ns = entry.ns.saturating_add(g.tally.ns);
        if shape.kind == SampleKind::Cpu {
            let function = hot_function_name(&stack.frames);
            let h = hot
                .entry((function.clone(), g.category))
                .or_insert_with(|| HotFunction {
                    function,
                    category: g.category,
                    frames: stack.frames.clone(),
                    user: user_frame(&stack.frames),
                    samples: 0,
                    ns: 0,
                });
            h.samples = h.samples.saturating_add(g.tally.samples);
            h.ns = h.ns.saturating_add(g.tally.ns);
        }
    }
    for (key, mut site) in merged {
        if let Some(objects) = merged_objects.remove(&key) {
            site.locks = waited_locks(objects);
        }
        threads[key.0].sites.push(site);
    }
    let mut hot: Vec<HotFunction> = hot.into_values().collect();
    hot.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    hot.truncate(20);
    hot
}

/// A CPU sample's function among the hot ones. A sample inside the interposer's hook is the
/// hooked call's: it is named by the hook's exported function (`free`), the outermost of its own
/// frames, never by an internal one (`ss_free_always_timed`).
fn hot_function_name(frames: &[Frame]) -> String {
    let own = frames
        .iter()
        .take_while(|f| is_own_module(&f.module))
        .count();
    frames
        .get(own.saturating_sub(1))
        .and_then(|f| f.function.clone())
        .map(|n| qualified_name(&n).to_string())
        .unwrap_or_else(|| {
            frames
                .first()
                .map(Frame::display)
                .unwrap_or_else(|| "?".into())
        })
}

/// A site's lock words, most samples first, named by their address until `locknames` names them.
fn waited_locks(objects: HashMap<u64, Tally>) -> Vec<WaitedLock> {
    let mut locks: Vec<WaitedLock> = objects
        .into_iter()
        .map(|(object, t)| WaitedLock {
            object,
            samples: t.samples,
            ns: t.ns,
            name: format!("{object:#x}"),
            how: "address",
        })
        .collect();
    locks.sort_by(|a, b| (b.samples, b.ns, a.object).cmp(&(a.samples, a.ns, b.object)));
    locks
}

/// How one thread's sample weights are scaled: CPU samples to its time on a CPU, wall samples to
/// its time asleep, as the kernel counted them (1.0 each without kernel figures).
#[derive(Debug, Clone, Copy)]
struct WeightScale {
    cpu: f64,
    wall: f64,
}

impl WeightScale {
    fn weight(&self, s: &Sample) -> u64 {
        let f = match s.kind {
            SampleKind::Wall => self.wall,
            SampleKind::Cpu | SampleKind::Kernel => self.cpu,
        };
        (s.weight_ns as f64 * f).round() as u64
    }
}

/// Sums each thread's kernel figures (`ThreadStates::kernel`) and derives its weight scales.
fn weight_scales(
    profile: &Profile,
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
) -> Vec<WeightScale> {
    let mut figures: Vec<Option<KernelFigures>> = vec![None; threads.len()];
    for p in &profile.sched {
        let Some(&ti) = index.get(&p.serial) else {
            continue;
        };
        let k = figures[ti].get_or_insert_with(KernelFigures::default);
        k.exec_ns = k.exec_ns.saturating_add(p.exec_ns);
        k.run_delay_ns = k.run_delay_ns.saturating_add(p.run_delay_ns);
        k.minflt = k.minflt.saturating_add(p.minflt.into());
        k.majflt = k.majflt.saturating_add(p.majflt.into());
        k.stime_ns = k.stime_ns.saturating_add(p.stime_ns);
        if p.minflt > 0 || p.majflt > 0 {
            k.fault_stime_ns = k.fault_stime_ns.saturating_add(p.stime_ns);
        }
        k.switches = k.switches.saturating_add(p.switches.into());
    }
    let mut sums = vec![(0u64, 0u64); threads.len()];
    for s in &profile.samples {
        if let Some(&ti) = index.get(&s.serial) {
            let sum = &mut sums[ti];
            match s.kind {
                SampleKind::Wall => sum.1 = sum.1.saturating_add(s.weight_ns),
                SampleKind::Cpu | SampleKind::Kernel => sum.0 = sum.0.saturating_add(s.weight_ns),
            }
        }
    }
    let cpu_ns: HashMap<u32, u64> = profile
        .threads
        .iter()
        .map(|t| (t.serial, t.cpu_ns))
        .collect();
    threads
        .iter_mut()
        .zip(figures)
        .zip(sums)
        .map(|((t, k), (cpu, wall))| {
            let Some(mut k) = k else {
                return WeightScale {
                    cpu: 1.0,
                    wall: 1.0,
                };
            };
            // The thread record's CPU time is read at its end: it includes the last stretch
            // after the sampler's last look.
            let exec = k
                .exec_ns
                .max(cpu_ns.get(&t.serial).copied().unwrap_or(0))
                .min(t.life_ns);
            k.exec_ns = exec;
            k.run_delay_ns = k.run_delay_ns.min(t.life_ns - exec);
            k.off_ns = t.life_ns - exec - k.run_delay_ns;
            t.kernel = Some(k);
            let factor = |target: u64, sampled: u64| {
                if sampled == 0 {
                    1.0
                } else {
                    target as f64 / sampled as f64
                }
            };
            WeightScale {
                cpu: factor(exec, cpu),
                wall: factor(k.off_ns, wall),
            }
        })
        .collect()
}

/// Adds what only the kernel's figures tell: the run-queue delay (`runnable`, or `spinning` for
/// a thread that mostly yields the CPU), the running time no CPU sample stands for (`compute`),
/// and the system time of page faults (`kernel_memory`, taken from `compute`, where memory
/// stores that fault are sampled).
fn add_kernel_states(
    profile: &Profile,
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
    kernel_signs: &KernelSigns,
    start_ns: u64,
    slice_ns: u64,
) {
    // The run-queue delay of each look, spread over the time since the thread's previous look.
    let mut last_look: Vec<Option<u64>> = vec![None; threads.len()];
    let starts: HashMap<u32, u64> = profile
        .threads
        .iter()
        .map(|t| (t.serial, t.start_mono_ns))
        .collect();
    for (ti, t) in threads.iter_mut().enumerate() {
        let Some(k) = t.kernel else { continue };
        let on_cpu = t.awake_ns();
        let yielding = kernel_signs.yield_ns[ti] * 2 > on_cpu && on_cpu > 0;
        let waiting = if yielding {
            Category::Spinning
        } else {
            Category::Runnable
        };
        // A thread no look ever found asleep: the kernel says it slept `off_ns`, in stretches
        // shorter than the looks (a lock taken and handed over many times a millisecond). Where
        // its CPU samples show what it waits for (the lock paths of a contended lock, I/O), the
        // sleep is that, in the same proportions; only without any such sign does it stay
        // runnable (the last stretch after the sampler's last look). Before, all of it was
        // runnable: 530 ms against Linux's 60 ms run delay for a worker on malloc's arena lock.
        let missed = if t.samples > 0 && kernel_signs.wall_seen[ti] == 0 {
            k.off_ns
        } else {
            0
        };
        let signs = [
            Category::Lock,
            Category::Io,
            Category::Blocked,
            Category::Idle,
        ];
        let shown: u64 = signs.iter().map(|c| t.ns[c.index()]).sum();
        let mut missed_runnable = missed;
        if missed > 0 && shown > 0 {
            let mut given = 0u64;
            for (i, c) in signs.iter().enumerate() {
                let part = if i + 1 == signs.len() {
                    missed - given
                } else {
                    (missed as u128 * t.ns[c.index()] as u128 / shown as u128) as u64
                };
                given += part;
                t.ns[c.index()] = t.ns[c.index()].saturating_add(part);
            }
            missed_runnable = 0;
        }
        t.ns[waiting.index()] =
            t.ns[waiting.index()].saturating_add(k.run_delay_ns + missed_runnable);
        // Page faults: system time the CPU samples saw as the user's own stores. System time the
        // samples explain otherwise (the kernel's work inside an I/O call or another system call,
        // such as the futex calls of a lock handed back and forth, or a sched_yield back-off:
        // TBB's spin_mutex) is not page faults. Before the other system calls counted, two
        // Python threads handing the GIL over had all their system time read as page faults
        // (2,500 faults, 730 ms).
        let compute = t.ns[Category::Compute.index()];
        let seen = t.ns[Category::KernelMemory.index()]
            + t.ns[Category::Io.index()]
            + kernel_signs.io_call_ns[ti]
            + kernel_signs.syscall_ns[ti]
            + kernel_signs.yield_ns[ti];
        let faults = k.fault_stime_ns.saturating_sub(seen).min(compute);
        if faults > 0 && compute > 0 {
            let share = faults as f64 / compute as f64;
            t.ns[Category::Compute.index()] -= faults;
            t.ns[Category::KernelMemory.index()] += faults;
            for slice in &mut t.slices {
                let moved = (slice[Category::Compute.index()] as f64 * share) as u64;
                slice[Category::Compute.index()] -= moved;
                slice[Category::KernelMemory.index()] += moved;
            }
        }
        // Running time without a CPU sample (sampling off, or a signal the thread blocks). A
        // thread whose CPU samples were all idle (a runtime's spinning worker) had them: its
        // running time counted twice, once idle and once computation, and its states summed to
        // 147% of its life.
        let unsampled = k.exec_ns.saturating_sub(on_cpu);
        if unsampled > k.exec_ns / 20 && on_cpu == 0 && t.cpu_marks.is_empty() {
            t.ns[Category::Compute.index()] += unsampled;
        }
        last_look[ti] = starts.get(&t.serial).copied();
    }
    for p in &profile.sched {
        let Some(&ti) = index.get(&p.serial) else {
            continue;
        };
        let t = &mut threads[ti];
        let Some(from) = last_look[ti] else { continue };
        last_look[ti] = Some(p.mono_ns);
        if p.run_delay_ns == 0 {
            continue;
        }
        let waiting = if t.ns[Category::Runnable.index()] > 0 {
            Category::Runnable
        } else {
            Category::Spinning
        };
        // Evenly over the span since the previous look (at most the span itself).
        let span = p.mono_ns.saturating_sub(from).max(1);
        let delay = p.run_delay_ns.min(span);
        spread_evenly(
            &mut t.slices,
            start_ns,
            slice_ns,
            from,
            p.mono_ns,
            delay,
            waiting,
        );
    }
    // A slice holds at most its own length: the kernel's waits are placed by estimate and the
    // samples' weights are scaled, so an overfull slice is scaled down.
    for t in threads.iter_mut().filter(|t| t.kernel.is_some()) {
        for slice in &mut t.slices {
            let total: u64 = slice.iter().sum();
            if total > slice_ns {
                let f = slice_ns as f64 / total as f64;
                for v in slice.iter_mut() {
                    *v = (*v as f64 * f) as u64;
                }
            }
        }
    }
}

/// Adds `ns` of category `c` spread evenly over [begin, end) to the slices it overlaps.
fn spread_evenly(
    slices: &mut [PerCategory<u64>],
    start: u64,
    slice_ns: u64,
    begin: u64,
    end: u64,
    ns: u64,
    c: Category,
) {
    let begin = begin.max(start);
    if end <= begin || slice_ns == 0 {
        return;
    }
    let span = (end - begin) as f64;
    let mut t = begin;
    while t < end {
        let i = ((t - start) / slice_ns) as usize;
        if i >= slices.len() {
            break;
        }
        let slice_end = start
            .saturating_add((i as u64 + 1).saturating_mul(slice_ns))
            .min(end);
        let part = slice_end.saturating_sub(t);
        if part == 0 {
            break;
        }
        let add = (ns as f64 * part as f64 / span).round() as u64;
        slices[i][c.index()] = slices[i][c.index()].saturating_add(add);
        t += part;
    }
}

/// Joins intervals of the same category that touch or nearly touch (a CPU sample's interval is
/// its CPU time, so running stretches between samples leave small gaps).
fn merge_runs(mut list: Vec<(u64, u64, Category)>) -> Vec<(u64, u64, Category)> {
    const GAP_NS: u64 = 2_000_000;
    list.sort_by_key(|r| (r.1, r.0));
    let mut out: Vec<(u64, u64, Category)> = Vec::new();
    for (begin, end, c) in list {
        match out.last_mut() {
            Some(last) if last.2 == c && begin <= last.1.saturating_add(GAP_NS) => {
                last.1 = last.1.max(end)
            }
            Some(last) if begin < last.1 => {
                // Overlaps another category's stretch: start where that one ended.
                let begin = last.1;
                if end > begin {
                    out.push((begin, end, c));
                }
            }
            _ => out.push((begin, end, c)),
        }
    }
    out
}

fn peak_threads(profile: &Profile) -> usize {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for t in &profile.threads {
        let end = profile.thread_end_ns(t);
        // A folded group counts as its threads' mean concurrency over its span.
        let width = match t.folded {
            Some(f) => f
                .life_ns
                .div_ceil(end.saturating_sub(t.start_mono_ns).max(1))
                .max(1),
            None => 1,
        };
        let width = i32::try_from(width).unwrap_or(i32::MAX / 4);
        events.push((t.start_mono_ns, width));
        events.push((end, -width));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut live, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        live += d;
        peak = peak.max(live);
    }
    peak.max(1) as usize
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
