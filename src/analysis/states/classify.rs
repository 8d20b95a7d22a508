//! The classifier: each sample's frames and system call read into a category (once per stack
//! shape), lock sharing and lock words told apart, and the samples tallied per thread and group.

use super::*;

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
pub(super) fn holds_futex_in_rdi(f: &Frame) -> bool {
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
pub(super) enum LockWord {
    None,
    /// The sample's `object`: a futex call's first argument.
    Sample,
    /// The fixed address of the atomic instruction it was sampled at (a static lock word).
    Fixed(u64),
}

/// x86-64's futex system call: a wall sample in it has the futex word's address as `object`.
pub(super) const FUTEX: u32 = 202;

/// What classifies a sample: every sample of one shape gets one category. The futex word's role
/// is part of it: two sleeps at one stack, one on a lock's word and one on a condition's, are a
/// lock wait and a blocked wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Shape {
    pub(super) kind: SampleKind,
    pub(super) pc: u64,
    pub(super) stack: Option<u32>,
    pub(super) syscall: Option<u32>,
    /// The futex operation (0 outside futex calls).
    pub(super) op: u32,
    pub(super) role: Option<crate::analysis::runtime::Role>,
    /// A CPU sample in a pthread lock call that met none of its thread's recorded lock waits
    /// (`Classifier::unwaited`), in a thread that takes only its own locks or shares one.
    pub(super) unwaited: Option<Sharing>,
}

/// Whether a thread takes only locks no other thread takes (a lock call's atomic instruction then
/// finds the lock word's cache line in its own CPU's cache), or shares one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Sharing {
    Own,
    Shared,
}

/// Per thread (index into `profile.threads`): whether it takes a pthread lock another thread
/// takes too (or one its table could not keep apart: the overflow entry, a folded group's).
pub(super) fn lock_sharing(profile: &Profile) -> Vec<Sharing> {
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
pub(super) const HOOKED_LOCK_FUNCTIONS: &[&str] = &[
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
pub(super) type GroupKey = (u32, Shape);
/// A thread's merged site: (thread index, category, function, user frame).
pub(super) type SiteKey = (usize, Category, String, String);

/// Samples and the time they stand for.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tally {
    pub(super) samples: u64,
    pub(super) ns: u64,
}

impl Tally {
    pub(super) fn add(&mut self, samples: u64, ns: u64) {
        self.samples = self.samples.saturating_add(samples);
        self.ns = self.ns.saturating_add(ns);
    }
}

/// One distinct shape, classified once: what every sample of that shape is.
#[derive(Debug, Clone)]
pub(super) struct ClassifiedStack {
    pub(super) category: Category,
    pub(super) frames: Vec<Frame>,
    /// The frame that decided the category.
    pub(super) decided_by: Option<usize>,
    pub(super) on_cpu: bool,
    /// A CPU sample decided by an I/O call's wrapper.
    pub(super) in_io_call: bool,
    /// A CPU sample at or just after a `syscall` instruction: the thread was in a system call.
    pub(super) in_syscall: bool,
    /// A spinning sample decided by a yielding function (`sched_yield`).
    pub(super) yielding: bool,
    /// Where its samples' lock word comes from.
    pub(super) lock_word: LockWord,
    /// A lock sample on a CPU decided by a pthread lock function the hooks see (HOOKED_LOCK_FUNCTIONS).
    pub(super) in_hooked_lock_call: bool,
}

/// The one classification of thread-state samples: each distinct shape classified once, by its
/// frames, system call, futex word and instruction (docs/STATES.md, "How samples are
/// classified"). Every view reads its result (`StateReport::stacks`, `sample_stacks`).
pub(super) struct Classifier<'a, 's> {
    pub(super) profile: &'a Profile,
    pub(super) sym: &'a mut Symbolizer<'s>,
    pub(super) code: &'a mut CodeReader,
    pub(super) words: &'a crate::analysis::futex::Words,
    pub(super) rules: Rules,
    pub(super) by_shape: HashMap<Shape, usize>,
    pub(super) stacks: Vec<ClassifiedStack>,
}

impl Classifier<'_, '_> {
    /// The futex word's role, for a wall sample in a futex call on a word the interposer saw.
    pub(super) fn word(&self, s: &Sample) -> Option<&crate::analysis::futex::Word> {
        (s.kind == SampleKind::Wall && s.syscall == Some(FUTEX))
            .then(|| self.words.get(s.object))
            .flatten()
    }

    pub(super) fn shape(&self, s: &Sample) -> Shape {
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
    pub(super) fn unwaited(
        &mut self,
        shape: Shape,
        i: usize,
        s: &Sample,
        sharing: Sharing,
    ) -> (Shape, usize) {
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
    pub(super) fn stack_of(&mut self, s: &Sample) -> (Shape, usize) {
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

    pub(super) fn classify(&mut self, s: &Sample) -> ClassifiedStack {
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
            && crate::analysis::futex::in_tbb_acquisition(&frames)
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
    pub(super) fn lock_word(
        &mut self,
        s: &Sample,
        category: Category,
        frames: &[Frame],
        deciding: Option<&Frame>,
    ) -> LockWord {
        let modules = &self.profile.modules;
        let in_runtime = deciding
            .and_then(|f| f.function.as_deref())
            .is_some_and(|n| crate::analysis::runtime::entry_for(n).is_some());
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
pub(super) struct Group {
    pub(super) category: Category,
    /// Index into the classified stacks.
    pub(super) stack: usize,
    pub(super) tally: Tally,
    /// The lock words its lock-wait samples caught.
    pub(super) objects: HashMap<u64, Tally>,
}

/// What the per-sample pass sums besides the threads' own figures.
pub(super) struct Tallies {
    pub(super) groups: HashMap<GroupKey, Group>,
    /// Per thread: stretches of one category, unmerged.
    pub(super) intervals: Vec<Vec<(u64, u64, Category)>>,
    /// Per sample of the profile: its classified stack, or `NO_STACK`.
    pub(super) sample_stacks: Vec<u32>,
    pub(super) signs: KernelSigns,
    /// Per thread: the weight of its lock samples, and of those that meet a recorded lock wait.
    pub(super) lock_weight: Vec<(u64, u64)>,
    /// Per thread: the recorded lock waits' length.
    pub(super) lock_recorded_ns: Vec<u64>,
}

/// Per thread: what the kernel's figures are read against (`add_kernel_states`).
pub(super) struct KernelSigns {
    /// Spinning time in yielding functions.
    pub(super) yield_ns: Vec<u64>,
    /// Wall samples taken.
    pub(super) wall_seen: Vec<u64>,
    /// CPU samples inside an I/O call's wrapper (the kernel's work for it).
    pub(super) io_call_ns: Vec<u64>,
    /// Other CPU samples in a system call (a futex wait or wake, any call not already counted as
    /// I/O or kernel memory work): the kernel's work for it, not page faults.
    pub(super) syscall_ns: Vec<u64>,
}

/// Each sample, in the profile's order: classified (once per shape), then added to its thread's
/// time, timeline and marks, and to its group (with the lock word it caught).
pub(super) fn tally_samples(
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
pub(super) struct RecordedLockWaits {
    /// Per thread: (begin, end) sorted by begin, and the largest end up to each.
    pub(super) waits: Vec<Vec<(u64, u64)>>,
    pub(super) max_end: Vec<Vec<u64>>,
    /// Per thread: the waits' length.
    pub(super) total_ns: Vec<u64>,
}

impl RecordedLockWaits {
    pub(super) fn new(
        profile: &Profile,
        words: &crate::analysis::futex::Words,
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
    pub(super) fn meets(&self, ti: usize, begin: u64, end: u64) -> bool {
        let before_end = self.waits[ti].partition_point(|w| w.0 < end);
        before_end > 0 && self.max_end[ti][before_end - 1] > begin
    }
}

/// A lock word is a 4-byte aligned user address, and not one of the interposer's own words (its
/// wait for the flusher at exit).
pub(super) fn is_lock_word(profile: &Profile, word: u64) -> bool {
    word >= 0x1000
        && word.is_multiple_of(4)
        && !profile
            .modules
            .iter()
            .rfind(|m| m.lo <= word && word < m.hi)
            .is_some_and(|m| is_own_module(&m.path))
}

/// Adds one classified sample of weight `weight` to its thread.
pub(super) fn add_to_thread(
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
pub(super) fn merge_sites(
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
pub(super) fn hot_function_name(frames: &[Frame]) -> String {
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
pub(super) fn waited_locks(objects: HashMap<u64, Tally>) -> Vec<WaitedLock> {
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
