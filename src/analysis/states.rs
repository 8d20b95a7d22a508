//! The thread-state stage of the analysis: each thread-state sample classified into a category by
//! its frames and system call (the rules are data: docs/state-rules.txt), then summed per thread,
//! per time slice, per stack. See docs/STATES.md.

use crate::profile::Profile;
use crate::profile::format::{THREAD_MAIN, THREAD_SIGNAL_BLOCKED};
use crate::profile::samples::{Sample, SampleKind, SamplingInfo};
use crate::symbols::code::CodeReader;
use crate::symbols::{Frame, Symbolizer, qualified_name, user_frame};
use crate::util::ratio;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Category {
    #[default]
    Compute,
    Allocator,
    Lock,
    Atomic,
    Io,
    Blocked,
    KernelMemory,
}

/// How many categories there are: the length of per-category arrays.
pub const CATEGORY_COUNT: usize = 7;

pub const CATEGORIES: [Category; CATEGORY_COUNT] = [
    Category::Compute,
    Category::Allocator,
    Category::Lock,
    Category::Atomic,
    Category::Io,
    Category::Blocked,
    Category::KernelMemory,
];

/// The categories' JSON keys (and names in the rules file), in `CATEGORIES` order.
pub const CATEGORY_KEYS: [&str; CATEGORY_COUNT] = [
    "compute",
    "allocator",
    "lock",
    "atomic",
    "io",
    "blocked",
    "kernel_memory",
];

impl Category {
    /// The JSON key (and the name in the rules file).
    pub fn key(self) -> &'static str {
        CATEGORY_KEYS[self as usize]
    }

    /// One character per time slice in the text timeline.
    pub fn glyph(self) -> char {
        match self {
            Category::Compute => '=',
            Category::Allocator => 'A',
            Category::Lock => 'L',
            Category::Atomic => '@',
            Category::Io => 'I',
            Category::Blocked => '.',
            Category::KernelMemory => 'K',
        }
    }

    fn from_key(key: &str) -> Option<Category> {
        CATEGORIES.iter().copied().find(|c| c.key() == key)
    }

    /// The index of the category in per-category arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// Words for the time spent in it, for sentences ("the biggest other part is lock waits").
    pub fn words(self) -> &'static str {
        match self {
            Category::Compute => "computation",
            Category::Allocator => "the allocator",
            Category::Lock => "lock waits",
            Category::Atomic => "atomic operations",
            Category::Io => "I/O",
            Category::Blocked => "blocking (sleeps, condition variables, joins)",
            Category::KernelMemory => "kernel memory work (page faults, mmap)",
        }
    }
}

/// Time per category, indexed by `Category::index`.
pub type PerCategory<T> = [T; CATEGORY_COUNT];

/// The categories whose stacks the report lists per thread (`state_sites`), and how many of
/// each; the findings read the same lists.
pub const SITE_CATEGORIES: [Category; 3] = [Category::Lock, Category::Allocator, Category::Atomic];
pub const SITES_PER_CATEGORY: usize = 5;

// ---- the rules ----

static RULES_TEXT: &str = include_str!("../../docs/state-rules.txt");

#[derive(Debug, Clone, PartialEq, Eq)]
enum RuleKind {
    Function,
    CpuFunction,
    Syscall,
    AtomicIn,
}

#[derive(Debug, Clone)]
struct Rule {
    category: Category,
    kind: RuleKind,
    pattern: String,
}

/// Glob matching with `*` as any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

pub struct Rules {
    rules: Vec<Rule>,
}

impl Rules {
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut rules = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // The pattern is the rest of the line (C++ names have spaces: `operator new`).
            let mut words = line.splitn(3, char::is_whitespace);
            let (Some(category), Some(kind), Some(pattern)) = (
                words.next(),
                words.next(),
                words.next().map(str::trim).filter(|p| !p.is_empty()),
            ) else {
                return Err(format!("line {}: expected `category kind pattern`", n + 1));
            };
            let category = Category::from_key(category)
                .ok_or_else(|| format!("line {}: unknown category {category}", n + 1))?;
            let kind = match kind {
                "function" => RuleKind::Function,
                "cpu-function" => RuleKind::CpuFunction,
                "syscall" => RuleKind::Syscall,
                "atomic-in" => RuleKind::AtomicIn,
                other => return Err(format!("line {}: unknown rule kind {other}", n + 1)),
            };
            rules.push(Rule {
                category,
                kind,
                pattern: pattern.to_string(),
            });
        }
        Ok(rules).map(|rules| Rules { rules })
    }

    pub fn builtin() -> Rules {
        Rules::parse(RULES_TEXT).expect("docs/state-rules.txt is valid")
    }

    fn by_function(&self, name: &str, cpu: bool) -> Option<Category> {
        let name = qualified_name(name);
        let bare = name.split('(').next().unwrap_or(name).trim();
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::Function || (cpu && r.kind == RuleKind::CpuFunction))
            .find(|r| glob(&r.pattern, bare))
            .map(|r| r.category)
    }

    fn by_syscall(&self, name: &str) -> Option<Category> {
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::Syscall)
            .find(|r| glob(&r.pattern, name))
            .map(|r| r.category)
    }

    /// The category of a CPU sample at a locked instruction that no function rule decided.
    pub fn atomic(&self, module: &str) -> Category {
        let file = crate::symbols::file_name(module);
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::AtomicIn)
            .find(|r| glob(&r.pattern, file))
            .map_or(Category::Atomic, |r| r.category)
    }

    /// The category of a sample whose frames are `frames` (innermost first), and the index of
    /// the frame that decided it.
    pub fn classify(
        &self,
        frames: &[Frame],
        kind: SampleKind,
        syscall: Option<&str>,
    ) -> (Category, Option<usize>) {
        if kind == SampleKind::Kernel {
            // Running time of a thread that blocks the sampling signal: no instruction to look at.
            return (Category::Compute, None);
        }
        let cpu = kind == SampleKind::Cpu;
        for (i, f) in frames.iter().enumerate() {
            if let Some(c) = f.function.as_deref().and_then(|n| self.by_function(n, cpu)) {
                return (c, Some(i));
            }
        }
        if cpu {
            return (Category::Compute, None);
        }
        let name = syscall.unwrap_or("none");
        (self.by_syscall(name).unwrap_or(Category::Blocked), None)
    }
}

/// x86-64 system call names the rules speak of (others are named `syscall_N`).
fn syscall_name(nr: u32, arg: u32) -> String {
    const FUTEX_CMD_MASK: u32 = !(128 | 256); // without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME
    let name = match nr {
        0 => "read",
        1 => "write",
        2 => "open",
        3 => "close",
        7 => "poll",
        9 => "mmap",
        10 => "mprotect",
        11 => "munmap",
        12 => "brk",
        17 => "pread64",
        18 => "pwrite64",
        19 => "readv",
        20 => "writev",
        23 => "select",
        25 => "mremap",
        28 => "madvise",
        34 => "pause",
        35 => "nanosleep",
        43 => "accept",
        45 => "recvfrom",
        47 => "recvmsg",
        61 => "wait4",
        74 => "fsync",
        75 => "fdatasync",
        128 => "rt_sigtimedwait",
        130 => "rt_sigsuspend",
        202 if arg & FUTEX_CMD_MASK == 0 => "futex-wait", // FUTEX_WAIT: glibc's lock waits
        202 => "futex",
        230 => "clock_nanosleep",
        232 => "epoll_wait",
        247 => "waitid",
        257 => "openat",
        270 => "pselect6",
        271 => "ppoll",
        281 => "epoll_pwait",
        288 => "accept4",
        299 => "recvmmsg",
        441 => "epoll_pwait2",
        other => return format!("syscall_{other}"),
    };
    name.to_string()
}

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
}

impl StateSite {
    /// The function the user called that led here: the frame just inside the user frame
    /// (`random` for a lock taken inside random()), else the deciding frame.
    pub fn function(&self) -> String {
        let index = if self.user > 0 && self.user < self.frames.len() {
            self.user - 1
        } else {
            self.decided_by.unwrap_or(0)
        };
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

/// glibc's debug names of public functions carry internal prefixes: `__random` is random(),
/// `__GI___libc_write` is write's implementation.
fn public_libc_name(name: &str) -> &str {
    let name = name.strip_prefix("__GI_").unwrap_or(name);
    let name = name.strip_prefix("__libc_").unwrap_or(name);
    let bare = name.trim_start_matches('_');
    // `_IO_fwrite` keeps its name: only lower-case names are public functions in disguise.
    if bare.starts_with(|c: char| c.is_ascii_lowercase()) {
        bare
    } else {
        name
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
    pub samples: u64,
    /// Per time slice, the time of each category in it.
    pub slices: Vec<PerCategory<u64>>,
    /// Sample groups, most time first.
    pub sites: Vec<StateSite>,
    /// Stretches of one category, from the samples in time order: (begin, end, category), ns
    /// from the process's start. A sample stands for the interval just before it.
    pub runs: Vec<(u64, u64, Category)>,
}

impl ThreadStates {
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

    /// The thread's life that no sample stands for (runnable, or after its last sample).
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

/// The name of a signal number, as `kill -l` would put it.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    let rtmin = 34; // glibc's SIGRTMIN (the kernel's 32 and 33 are glibc's own)
    match sig {
        1..=31 => NAMES[sig as usize].to_string(),
        s if s >= rtmin => format!("SIGRTMIN+{}", s - rtmin),
        s => format!("signal {s}"),
    }
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
fn sample_frames(
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
        SampleKind::Cpu => frames.extend(sym.stack(stack)),
        SampleKind::Wall => {
            // The scan's first word is the pc itself.
            for &ret in stack.pcs.iter().skip(1) {
                if code.follows_call(&profile.modules, ret) {
                    frames.extend(sym.address(ret - 1, s.mono_ns));
                }
            }
        }
    }
    frames
}

/// What classifies a sample: kind, pc, stack, system call and futex op.
type Shape = (SampleKind, u64, Option<u32>, Option<u32>, u32);
/// A shape within one thread (by serial).
type GroupKey = (u32, Shape);

pub fn build(
    profile: &Profile,
    sym: &mut Symbolizer,
    code: &mut CodeReader,
) -> Option<StateReport> {
    let sampling = profile.sampling.clone()?;
    let rules = Rules::builtin();
    let start_ns = profile.process.start_mono_ns;
    let wall_ns = profile.wall_ns().max(1);
    let slice_ns = wall_ns.div_ceil(TIMELINE_SLICES as u64).max(1);
    let mut threads: Vec<ThreadStates> = profile
        .threads
        .iter()
        .map(|t| {
            let end = profile.thread_end_ns(t);
            ThreadStates {
                serial: t.serial,
                tid: t.tid,
                name: t.name.clone(),
                main: t.flags & THREAD_MAIN != 0,
                life_ns: t.life_ns(end),
                folded: t.folded.map(|f| f.threads),
                signal_blocked: t.flags & THREAD_SIGNAL_BLOCKED != 0,
                ns: [0; CATEGORY_COUNT],
                samples: 0,
                slices: vec![[0; CATEGORY_COUNT]; TIMELINE_SLICES],
                sites: Vec::new(),
                runs: Vec::new(),
            }
        })
        .collect();
    let index: HashMap<u32, usize> = threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();

    // Classify each distinct (thread, kind, pc, stack, syscall, op) once.
    let mut groups: HashMap<GroupKey, (Category, usize, u64, u64)> = HashMap::new();
    let mut classified: Vec<(Category, Vec<Frame>, Option<usize>)> = Vec::new();
    let mut by_shape: HashMap<Shape, usize> = HashMap::new();
    let total = profile.samples.len();
    let mut intervals: Vec<Vec<(u64, u64, Category)>> = vec![Vec::new(); threads.len()];
    let mut sample_stacks: Vec<u32> = Vec::with_capacity(total);
    for (n, s) in profile.samples.iter().enumerate() {
        sym.progress(n, total);
        let Some(&ti) = index.get(&s.serial) else {
            sample_stacks.push(NO_STACK);
            continue;
        };
        let op = if s.syscall == Some(202) { s.arg } else { 0 };
        let shape = (s.kind, s.pc, s.stack, s.syscall, op);
        let ci = *by_shape.entry(shape).or_insert_with(|| {
            let frames = sample_frames(profile, sym, code, s);
            let syscall = s.syscall.map(|nr| syscall_name(nr, s.arg));
            let (mut category, decided) = rules.classify(&frames, s.kind, syscall.as_deref());
            if category == Category::Compute && code.at_or_after_atomic(&profile.modules, s.pc) {
                category = rules.atomic(frames.first().map_or("", |f| f.module.as_str()));
            }
            classified.push((category, frames, decided));
            classified.len() - 1
        });
        let category = classified[ci].0;
        sample_stacks.push(u32::try_from(ci).unwrap_or(NO_STACK));
        let end = s.mono_ns.saturating_sub(start_ns);
        intervals[ti].push((end.saturating_sub(s.weight_ns), end, category));
        let t = &mut threads[ti];
        t.ns[category.index()] = t.ns[category.index()].saturating_add(s.weight_ns);
        t.samples += 1;
        spread(
            &mut t.slices,
            start_ns,
            slice_ns,
            s.mono_ns,
            s.weight_ns,
            category,
        );
        let g = groups
            .entry((s.serial, shape))
            .or_insert((category, ci, 0, 0));
        g.2 += 1;
        g.3 = g.3.saturating_add(s.weight_ns);
    }

    // Per thread: sample groups merged by (category, user frame, function).
    // In a fixed order, heaviest first, so that each merged site and hot function shows the
    // frames of its heaviest stack and equal weights are listed the same way every time.
    let mut groups: Vec<(GroupKey, (Category, usize, u64, u64))> = groups.into_iter().collect();
    groups.sort_by(|a, b| {
        (b.1.3, b.1.2)
            .cmp(&(a.1.3, a.1.2))
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut merged: BTreeMap<(usize, Category, String, String), StateSite> = BTreeMap::new();
    let mut hot: BTreeMap<(String, Category), HotFunction> = BTreeMap::new();
    for &((serial, (kind, ..)), (category, ci, samples, ns)) in &groups {
        let frames = &classified[ci].1;
        let user = user_frame(frames);
        let site = StateSite {
            category,
            frames: frames.clone(),
            decided_by: classified[ci].2,
            user,
            samples,
            ns,
        };
        let key_user = site.user_frame().map(Frame::display).unwrap_or_default();
        let ti = index[&serial];
        let entry = merged
            .entry((ti, category, site.function(), key_user))
            .or_insert_with(|| StateSite {
                samples: 0,
                ns: 0,
                ..site.clone()
            });
        entry.samples = entry.samples.saturating_add(samples);
        entry.ns = entry.ns.saturating_add(ns);
        if kind == SampleKind::Cpu {
            let function = frames
                .first()
                .and_then(|f| f.function.clone())
                .map(|n| qualified_name(&n).to_string())
                .unwrap_or_else(|| {
                    frames
                        .first()
                        .map(Frame::display)
                        .unwrap_or_else(|| "?".into())
                });
            let h = hot
                .entry((function.clone(), category))
                .or_insert_with(|| HotFunction {
                    function,
                    category,
                    frames: frames.clone(),
                    user,
                    samples: 0,
                    ns: 0,
                });
            h.samples = h.samples.saturating_add(samples);
            h.ns = h.ns.saturating_add(ns);
        }
    }
    for ((ti, ..), site) in merged {
        threads[ti].sites.push(site);
    }
    for (t, list) in threads.iter_mut().zip(intervals) {
        t.sites
            .sort_by(|a, b| b.ns.cmp(&a.ns).then(b.samples.cmp(&a.samples)));
        t.runs = merge_runs(list);
    }
    let mut hot: Vec<HotFunction> = hot.into_values().collect();
    hot.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    hot.truncate(20);

    let stacks = classified
        .into_iter()
        .zip(by_shape_kinds(&by_shape))
        .map(|((category, frames, _), on_cpu)| SampledStack {
            category,
            frames,
            on_cpu,
        })
        .collect();
    Some(StateReport {
        sampling,
        stacks,
        sample_stacks,
        slice_ns,
        wall_ns,
        cpus: profile.process.ncpus,
        peak_threads: peak_threads(profile),
        threads,
        hot,
    })
}

/// Per classified stack (by its index), whether its samples were on the CPU.
fn by_shape_kinds(by_shape: &HashMap<Shape, usize>) -> Vec<bool> {
    let mut on_cpu = vec![false; by_shape.len()];
    for (&(kind, ..), &i) in by_shape {
        on_cpu[i] = kind != SampleKind::Wall;
    }
    on_cpu
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
    fn the_rules_file_parses_and_knows_every_category() {
        let rules = Rules::builtin();
        for c in CATEGORIES {
            if c == Category::Compute || c == Category::Atomic {
                continue; // decided by default and by the instruction, not by rules
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
            rules.classify(&frames, SampleKind::Cpu, None),
            (Category::Lock, Some(0))
        );
        let frames = [frame("_int_free"), frame("free"), frame("worker")];
        assert_eq!(
            rules.classify(&frames, SampleKind::Cpu, None).0,
            Category::Allocator
        );
        // A condition wait re-taking its mutex is a lock wait; the wait itself is not.
        let frames = [
            frame("__futex_abstimed_wait_common"),
            frame("__pthread_cond_wait_common"),
            frame("worker"),
        ];
        assert_eq!(
            rules.classify(&frames, SampleKind::Wall, Some("futex")).0,
            Category::Blocked
        );
        assert_eq!(
            rules.atomic("/usr/lib/x86_64-linux-gnu/libc.so.6"),
            Category::Lock
        );
        assert_eq!(rules.atomic("/tmp/program"), Category::Atomic);
        let frames = [frame("compute_things"), frame("main")];
        assert_eq!(
            rules.classify(&frames, SampleKind::Cpu, None),
            (Category::Compute, None)
        );
    }

    #[test]
    fn wall_samples_fall_back_on_the_system_call() {
        let rules = Rules::builtin();
        let frames = [frame("unknown_function")];
        let by = |name: &str| rules.classify(&frames, SampleKind::Wall, Some(name)).0;
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
        // `read` on a CPU sample is I/O work; on a wall sample, waiting for input.
        let frames = [frame("read"), frame("main")];
        assert_eq!(
            rules.classify(&frames, SampleKind::Cpu, None).0,
            Category::Io
        );
        assert_eq!(
            rules.classify(&frames, SampleKind::Wall, Some("read")).0,
            Category::Blocked
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
