//! The wait-for stage (docs/WAITFOR.md): who waited for whom, on what, and what the other thread
//! was doing meanwhile; the names of the objects waited for; the critical path of the run.
//!
//! Each blocking wait the interposer recorded (SS_REC_WAITS) has a waiter, an object and the
//! thread at the other end: a lock's owner when the wait began, the thread that signalled a
//! condition variable or posted a semaphore, the joined thread. A mutex wait that outlasted its
//! first holder is cut where other waiters took the mutex (holder_pieces). Waits, or their parts,
//! are summed into edges (waiter, other, kind, object); an edge's activity is the other thread's
//! own samples that fall inside them ("held across `fdatasync` in `log_line` at
//! log_fsync.cpp:34").

use super::states::{Category, public_libc_name, syscall_name};
use super::summary::Summary;
use crate::profile::format::{LockKind, LockRole, THREAD_MAIN, WaitKind};
use crate::profile::samples::{Sample, SampleKind, Wait};
use crate::profile::{Profile, ThreadStats};
use crate::symbols::{
    DataSymbols, Frame, Symbolizer, called_frame, is_runtime_frame, qualified_name, user_frame,
};
use std::collections::{BTreeMap, HashMap};

/// What the thread at the other end of an edge did while the waiter waited, from its own
/// samples: one activity (category, function, user frame) with the time it stands for.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    pub category: Category,
    /// The system call or the function the user called (`fdatasync`, `write`), else the
    /// innermost function.
    pub function: String,
    /// The user's frame that led there.
    pub frame: Option<Frame>,
    pub ns: u64,
    /// On a CPU inside an I/O call (`fdatasync`'s kernel work): computation done for the I/O.
    pub in_io_call: bool,
}

impl Activity {
    /// The state it counts in wherever a holder's time is told apart: I/O for time on a CPU inside
    /// an I/O call too (what the thread does for the I/O), else its category.
    pub fn state(&self) -> Category {
        if self.in_io_call {
            Category::Io
        } else {
            self.category
        }
    }

    /// `fdatasync in log_line at log_fsync.cpp:34`.
    pub fn text(&self) -> String {
        match &self.frame {
            Some(f) if f.function.is_some() => format!("{} in {}", self.function, f.short_text()),
            _ => self.function.clone(),
        }
    }
}

/// The waits of one thread for one other thread on one object.
#[derive(Debug, Clone, Default)]
pub struct Edge {
    /// Index of the waiting thread in `profile.threads`.
    pub waiter: usize,
    /// Index of the thread at the other end (None: unknown, or outside the profile).
    pub other: Option<usize>,
    /// Its tid as recorded (None: unknown).
    pub other_tid: Option<u32>,
    pub kind: Option<WaitKind>,
    pub object: u64,
    /// The waits with a part on this edge: a mutex wait that outlasted its first holder has a
    /// part on the edge of each thread that held the mutex after it (holder_pieces).
    pub waits: u64,
    /// Of `waits`, those that began on this edge (one edge each: their sum is the number of waits).
    pub waits_begun: u64,
    /// The parts' time (a wait's parts add up to the wait).
    pub wait_ns: u64,
    /// Of `wait_ns`, the waits' tails after their waker's wake (futex and mutex waits whose wake
    /// time is known): the waiters waking up, the other thread already gone on. What it did then is not
    /// in `activities`.
    pub woken_tail_ns: u64,
    /// The other thread's sampled time inside the waits, and what it was, most first.
    pub other_sampled_ns: u64,
    pub activities: Vec<Activity>,
}

/// What the holders of one lock did while other threads waited for it (their own samples inside
/// the waits), summed over the lock's wait-for edges: the one set of figures every finding about
/// the lock reads.
#[derive(Debug, Clone, Default)]
pub struct HolderTime {
    pub waits: u64,
    pub wait_ns: u64,
    /// Of it, the waits' tails after the holder's wake (Edge::woken_tail_ns).
    pub woken_tail_ns: u64,
    /// The holders' sampled time inside the waits.
    pub sampled_ns: u64,
    /// Of it, in I/O: off a CPU waiting for it, or on one inside an I/O call.
    pub io_ns: u64,
    /// Of it, asleep outside I/O: sleeps, condition variables, joins, waits for events
    /// (`epoll_wait`, `poll`), idle.
    pub asleep_ns: u64,
    /// The waiting that overlapped the holders' I/O, and their sleep: each edge's waits times
    /// the holder's share of that state in them (what taking it out of the critical section could
    /// remove).
    pub io_stake_ns: f64,
    pub asleep_stake_ns: f64,
    /// Each activity once (by its text and state), most time first.
    pub activities: Vec<Activity>,
    /// Thread indexes (`profile.threads`), in the order first seen.
    pub waiters: Vec<usize>,
    pub holders: Vec<usize>,
}

impl HolderTime {
    /// A share of the holders' sampled time inside the waits (0 without samples).
    pub fn share(&self, ns: u64) -> f64 {
        crate::util::ratio(ns, self.sampled_ns)
    }

    /// Whether a holder's state is asleep outside I/O.
    pub fn is_asleep(state: Category) -> bool {
        matches!(state, Category::Blocked | Category::Idle)
    }
}

/// A name a user recognizes for an object threads waited on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectName {
    pub object: u64,
    /// `log_mutex (log_fsync)`, `the lock initialised at open_account at named_locks.c:29`,
    /// or `0x55cc97d63080` as a last resort.
    pub name: String,
    /// How it was named: `runtime` (runtime_locks.json), `symbol`, `init-site` or `address`.
    pub how: &'static str,
}

/// One stretch of the critical path, walking back from the end of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSegment {
    /// Index of the thread in `profile.threads`.
    pub thread: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    /// None: the thread's own time (running, runnable, I/O); Some: a wait whose waker is not
    /// known or outside the program (the path stays on the thread).
    pub waiting: Option<WaitKind>,
    /// Not waiting, but asleep by the thread's sampled states (a call the interposer does not
    /// record): on the path as waiting with no known waker (`path_asleep`).
    pub asleep: bool,
}

#[derive(Debug, Clone, Default)]
pub struct CriticalPath {
    /// In time order.
    pub segments: Vec<PathSegment>,
    /// Summed per thread: (thread index, own ns, waiting ns), most first.
    pub by_thread: Vec<(usize, u64, u64)>,
    pub length_ns: u64,
}

/// A knot of the wait-for graph (after wPerf): threads that other threads wait for, and that
/// wait for no thread outside the knot (for one another at most). Work outside a knot does not
/// shorten the run while the others queue behind it; the knot's own work does.
#[derive(Debug, Clone, Default)]
pub struct Knot {
    /// Thread indexes, sorted.
    pub threads: Vec<usize>,
    /// The threads outside the knot that waited for its members, and for how long in all.
    pub waiters: Vec<usize>,
    pub waited_ns: u64,
}

#[derive(Debug, Clone, Default)]
pub struct WaitFor {
    /// Most waiting first.
    pub edges: Vec<Edge>,
    pub names: Vec<ObjectName>,
    pub critical_path: CriticalPath,
    /// Most waited for first.
    pub knots: Vec<Knot>,
    pub waits: u64,
    pub dropped: u64,
    /// What each lock's holders did while others waited for it, by the lock's address
    /// (`holder_times`): computed once, read by every finding about the lock.
    pub holders: BTreeMap<u64, HolderTime>,
}

impl WaitFor {
    pub fn name_of(&self, object: u64) -> Option<&ObjectName> {
        self.names.iter().find(|n| n.object == object)
    }

    /// The lock-wait edges on `object`, most waiting first.
    pub fn lock_edges(&self, object: u64) -> impl Iterator<Item = &Edge> {
        self.edges.iter().filter(move |e| {
            matches!(e.kind, Some(WaitKind::Lock | WaitKind::Futex)) && e.object == object
        })
    }

    /// What the holders of the lock at `object` did while others waited for it (None: no wait
    /// for it whose other end is known).
    pub fn holder_time(&self, object: u64) -> Option<&HolderTime> {
        self.holders.get(&object)
    }
}

/// What the holders of each lock did while other threads waited for it: the lock-wait edges
/// (pthread locks, futex words) whose other end is known, summed by the lock's address (that of
/// the lock a parked thread's own word stands for, `lock_of`: all its words' waits together).
pub fn holder_times(edges: &[Edge], lock_of: &HashMap<u64, u64>) -> BTreeMap<u64, HolderTime> {
    let mut all: BTreeMap<u64, HolderTime> = BTreeMap::new();
    for e in edges
        .iter()
        .filter(|e| matches!(e.kind, Some(WaitKind::Lock | WaitKind::Futex)))
    {
        let Some(other) = e.other else { continue };
        let lock = lock_of.get(&e.object).copied().unwrap_or(e.object);
        let h = all.entry(lock).or_default();
        h.waits += e.waits_begun;
        h.wait_ns = h.wait_ns.saturating_add(e.wait_ns);
        h.woken_tail_ns = h.woken_tail_ns.saturating_add(e.woken_tail_ns);
        h.sampled_ns = h.sampled_ns.saturating_add(e.other_sampled_ns);
        if !h.waiters.contains(&e.waiter) {
            h.waiters.push(e.waiter);
        }
        if !h.holders.contains(&other) {
            h.holders.push(other);
        }
        let (mut io, mut asleep) = (0u64, 0u64);
        for act in &e.activities {
            let state = act.state();
            if state == Category::Io {
                io = io.saturating_add(act.ns);
            } else if HolderTime::is_asleep(state) {
                asleep = asleep.saturating_add(act.ns);
            }
            let text = act.text();
            match h
                .activities
                .iter_mut()
                .find(|x| x.state() == state && x.text() == text)
            {
                Some(x) => x.ns = x.ns.saturating_add(act.ns),
                None => h.activities.push(Activity {
                    category: state,
                    in_io_call: false,
                    ..act.clone()
                }),
            }
        }
        h.io_ns = h.io_ns.saturating_add(io);
        h.asleep_ns = h.asleep_ns.saturating_add(asleep);
        let wait = e.wait_ns as f64;
        h.io_stake_ns += wait * crate::util::ratio(io, e.other_sampled_ns);
        h.asleep_stake_ns += wait * crate::util::ratio(asleep, e.other_sampled_ns);
    }
    for h in all.values_mut() {
        h.activities.sort_by_key(|x| std::cmp::Reverse(x.ns));
    }
    all
}

/// The label (`ThreadId::label`) of the profile's thread `i`: wait-for edges name threads by their
/// position in `Profile::threads`. `?` when there is none.
pub fn thread_label(profile: &Profile, i: usize) -> String {
    profile.threads.get(i).map_or_else(
        || "?".into(),
        |t| super::threads::ThreadId::of_profile(t).label(),
    )
}

/// What an edge's kind says: `mutex`, `condition variable`, `semaphore`, `join`.
pub fn kind_words(kind: Option<WaitKind>, lock_kind: Option<&str>) -> String {
    match kind {
        Some(WaitKind::Lock) => lock_kind.unwrap_or("lock").to_string(),
        Some(WaitKind::Condition) => "condition variable".into(),
        Some(WaitKind::Semaphore) => "semaphore".into(),
        Some(WaitKind::Join) => "join".into(),
        Some(WaitKind::Futex) => lock_kind.unwrap_or("futex word").to_string(),
        Some(WaitKind::Region) => "parallel region".into(),
        None => "?".into(),
    }
}

/// What an edge waited on, as the views say it: its kind (a lock's own kind), then the object's
/// name, unless it is a join.
pub fn edge_object_words(a: &super::Analysis, e: &Edge) -> String {
    let lock_kind = a
        .summary
        .locks
        .iter()
        .find(|l| l.address == e.object)
        .map(|l| l.kind_text())
        .or_else(|| {
            // A futex word that is not a lock: what the runtime calls it (`std::sync::Condvar`).
            (e.kind == Some(WaitKind::Futex))
                .then(|| a.futex_words.get(e.object).map(|w| w.object.as_str()))
                .flatten()
        });
    let kind = kind_words(e.kind, lock_kind);
    if e.object == 0 {
        kind
    } else {
        format!("{kind} {}", a.object_name(e.object))
    }
}

/// The thread a tid stood for at time `t` (tids are reused: the one whose life holds `t`).
fn thread_at(
    profile: &Profile,
    by_tid: &HashMap<u32, Vec<usize>>,
    tid: u32,
    t: u64,
) -> Option<usize> {
    let list = by_tid.get(&tid)?;
    list.iter()
        .copied()
        .find(|&i| {
            let th = &profile.threads[i];
            th.start_mono_ns <= t && t <= profile.thread_end_ns(th)
        })
        .or_else(|| list.last().copied())
}

pub fn build(
    profile: &Profile,
    sym: &mut Symbolizer,
    summary: &Summary,
    states: Option<&super::states::StateReport>,
    lock_of: &HashMap<u64, u64>,
    read_modules: bool,
) -> Option<WaitFor> {
    if profile.waits.is_empty() {
        return None;
    }
    let index: HashMap<u32, usize> = profile
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();
    let mut by_tid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, t) in profile.threads.iter().enumerate() {
        if t.folded.is_none() {
            by_tid.entry(t.tid).or_default().push(i);
        }
    }
    // Each thread's samples in time order (indices into profile.samples).
    let mut samples_of: Vec<Vec<usize>> = vec![Vec::new(); profile.threads.len()];
    for (i, s) in profile.samples.iter().enumerate() {
        if let Some(&ti) = index.get(&s.serial) {
            samples_of[ti].push(i);
        }
    }
    for list in &mut samples_of {
        list.sort_by_key(|&i| profile.samples[i].mono_ns);
    }

    // Waits resolved to thread indices.
    let mut resolved: Vec<ResolvedWait> = Vec::with_capacity(profile.waits.len());
    for w in &profile.waits {
        let Some(&waiter) = index.get(&w.serial) else {
            continue;
        };
        let other = w
            .other_tid
            .and_then(|tid| thread_at(profile, &by_tid, tid, w.start_mono_ns))
            .filter(|&o| o != waiter);
        resolved.push(ResolvedWait {
            waiter,
            other,
            wait: w.clone(),
        });
    }

    // Edges: each wait's parts (one per holder of a mutex it outlasted), summed per (waiter,
    // other thread, kind, object).
    let pieces = holder_pieces(&resolved, |i| profile.threads.get(i).map(|t| t.tid));
    type Key = (usize, Option<usize>, Option<u32>, u32, u64);
    let mut groups: BTreeMap<Key, Vec<&Piece>> = BTreeMap::new();
    for p in &pieces {
        let r = &resolved[p.wait];
        groups
            .entry((
                r.waiter,
                p.other,
                p.other_tid,
                r.wait.kind as u32,
                r.wait.object,
            ))
            .or_default()
            .push(p);
    }
    // Per classified stack of the thread states, what its samples were doing.
    let mut described: HashMap<u32, Described> = HashMap::new();
    let mut edges = Vec::new();
    for ((waiter, other, other_tid, _, object), members) in groups {
        let kind = resolved[members[0].wait].wait.kind;
        // A wait's parts on one edge are consecutive in `pieces`: counted once.
        let waits = 1 + members
            .windows(2)
            .filter(|w| w[0].wait != w[1].wait)
            .count() as u64;
        let mut edge = Edge {
            waiter,
            other,
            other_tid,
            kind: Some(kind),
            object,
            waits,
            waits_begun: members.iter().filter(|p| p.first).count() as u64,
            wait_ns: members.iter().map(|p| p.span_ns).sum(),
            woken_tail_ns: members.iter().map(|p| p.tail_ns).sum(),
            ..Edge::default()
        };
        if let Some(o) = other {
            let windows = members.iter().map(|p| p.window);
            (edge.other_sampled_ns, edge.activities) =
                activities(profile, states, &samples_of[o], windows, &mut described);
        }
        edges.push(edge);
    }
    edges.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.waiter.cmp(&b.waiter)));

    let names = name_objects(profile, sym, summary, &edges, read_modules);
    let path_threads: Vec<PathThread> = profile
        .threads
        .iter()
        .map(|t| PathThread::of(profile, t))
        .collect();
    // The thread that let a wait end: the holder of its last part (the one that handed the
    // mutex over), else the other end as recorded.
    let mut released_by: Vec<Option<usize>> = resolved.iter().map(|r| r.other).collect();
    for p in &pieces {
        released_by[p.wait] = p.other;
    }
    let path_waits: Vec<PathWait> = resolved
        .iter()
        .zip(released_by)
        .map(|(r, other)| PathWait {
            thread: r.waiter,
            start_ns: r.wait.start_mono_ns,
            end_ns: r.wait.end_mono_ns,
            other,
            kind: r.wait.kind,
        })
        .collect();
    let wall = profile.wall_ns();
    let knots = knots(
        &edges,
        profile.threads.len(),
        wall / KNOT_EDGE_SHARE_OF_WALL,
    );
    Some(WaitFor {
        holders: holder_times(&edges, lock_of),
        edges,
        names,
        knots,
        critical_path: {
            let mut path = critical_path(&path_threads, &path_waits);
            super::path_asleep::mark(&mut path, &super::path_asleep::stretches(profile, states));
            path
        },
        waits: profile.waits.len() as u64,
        dropped: profile.waits_dropped,
    })
}

/// What the samples of one classified stack were doing: their category (as the thread states
/// classified them), the system call or the function the user called, and the user's frame.
#[derive(Debug, Clone)]
struct Described {
    category: Category,
    function: String,
    frame: Option<Frame>,
    in_io_call: bool,
}

/// What the other thread's samples (`samples`: indices into `profile.samples`, in time order)
/// inside `windows` (from, to: the parts of the waits it stood for, Piece::window) were doing:
/// their sampled time, and their activities, most first.
fn activities(
    profile: &Profile,
    states: Option<&super::states::StateReport>,
    samples: &[usize],
    windows: impl Iterator<Item = (u64, u64)>,
    described: &mut HashMap<u32, Described>,
) -> (u64, Vec<Activity>) {
    let mut sampled_ns = 0u64;
    let mut acts: BTreeMap<(Category, String, String), Activity> = BTreeMap::new();
    for (start, end) in windows {
        let first = samples.partition_point(|&s| profile.samples[s].mono_ns < start);
        for &si in &samples[first..] {
            let s = &profile.samples[si];
            if s.mono_ns > end {
                break;
            }
            // The sample's category and frames as the thread states classified it: one
            // classification for every view. Its stack decides its description too (the stack's
            // shape holds the sample's kind, system call and futex operation).
            let Some((ci, stack)) = states.and_then(|r| r.sample_stack(si)) else {
                continue;
            };
            let d = described.entry(ci).or_insert_with(|| describe(stack, s));
            sampled_ns = sampled_ns.saturating_add(s.weight_ns);
            let key = (
                d.category,
                d.function.clone(),
                d.frame.as_ref().map(Frame::display).unwrap_or_default(),
            );
            let a = acts.entry(key).or_insert_with(|| Activity {
                category: d.category,
                function: d.function.clone(),
                frame: d.frame.clone(),
                ns: 0,
                in_io_call: d.in_io_call,
            });
            a.ns = a.ns.saturating_add(s.weight_ns);
        }
    }
    let mut activities: Vec<Activity> = acts.into_values().collect();
    activities.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.function.cmp(&b.function)));
    (sampled_ns, activities)
}

struct ResolvedWait {
    waiter: usize,
    other: Option<usize>,
    wait: Wait,
}

/// One part of a wait: the stretch of it that the waiter waited for one thread. A wait has one
/// part, except a mutex wait that outlasted its first holder (holder_pieces).
#[derive(Debug, Clone, PartialEq)]
struct Piece {
    /// Index of the wait in the resolved waits.
    wait: usize,
    other: Option<usize>,
    other_tid: Option<u32>,
    /// Its share of the wait's time: the parts of a wait add up to the wait.
    span_ns: u64,
    /// Where the other thread's samples stand for what the waiter waited for (from, to): while
    /// it held the lock, up to its release's wake.
    window: (u64, u64),
    /// Of `span_ns`, the waiter's own wake-up after the release that let it in (its last part).
    tail_ns: u64,
    /// The wait's first part (one per wait: their count is the number of waits).
    first: bool,
}

/// Whether a wait passes a lock from one holder to the next: a pthread mutex's, whose other
/// waiters' acquisitions say who held it after its first holder.
fn hands_over(w: &Wait) -> bool {
    w.kind == WaitKind::Lock && w.lock_kind == Some(LockKind::Mutex) && w.object != 0
}

/// The waits' parts. A wait records the mutex's owner when it began; with more than two threads
/// the mutex often changes hands before it ends, and the first holder may be long gone (asleep,
/// writing outside the lock) while the waiter still waits. Every contended acquisition of the
/// mutex is itself a recorded wait whose end is the acquisition and whose wake (where known) is
/// the release before it, so a wait that other threads' acquisitions fall inside is cut there:
/// its first holder up to the release that let the next one in, each next one from its
/// acquisition to the release after it, the last up to the wake that let the waiter in. The
/// wake-up between a release and the next acquisition goes with the part of the thread that
/// took the lock then (the waiter waited for it to take and release it), outside its window.
/// An acquisition that did not wait (the lock free at that instant) is not recorded: its hold
/// stays with the holder before it.
fn holder_pieces(resolved: &[ResolvedWait], tid_of: impl Fn(usize) -> Option<u32>) -> Vec<Piece> {
    let mut acquired: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, r) in resolved.iter().enumerate() {
        if hands_over(&r.wait) {
            acquired.entry(r.wait.object).or_default().push(i);
        }
    }
    for list in acquired.values_mut() {
        list.sort_by_key(|&i| (resolved[i].wait.end_mono_ns, i));
    }
    // A thread that waits for the mutex does not hold it: a holder's window ends at the latest
    // where its own next wait for the mutex begins (what the holder did after it let go, until
    // a thread that found the lock free released it to the next waiter, is not known).
    let mut waits_of: HashMap<(u64, usize), Vec<u64>> = HashMap::new();
    for list in acquired.values() {
        for &i in list {
            let r = &resolved[i];
            waits_of
                .entry((r.wait.object, r.waiter))
                .or_default()
                .push(r.wait.start_mono_ns);
        }
    }
    for starts in waits_of.values_mut() {
        starts.sort_unstable();
    }
    let held_until = |object: u64, holder: Option<usize>, (from, to): (u64, u64)| {
        let next = holder
            .and_then(|h| waits_of.get(&(object, h)))
            .and_then(|starts| starts.get(starts.partition_point(|&t| t < from)).copied());
        (from, next.map_or(to, |n| to.min(n)).max(from))
    };
    let mut out = Vec::with_capacity(resolved.len());
    for (i, r) in resolved.iter().enumerate() {
        let w = &r.wait;
        let (start, end) = (w.start_mono_ns, w.end_mono_ns.max(w.start_mono_ns));
        let woken = w.woken_at_ns().min(end);
        let recorded = (r.other, r.other.and(w.other_tid));
        let takers: Vec<usize> = match acquired.get(&w.object).filter(|_| hands_over(w)) {
            Some(list) => {
                let from = list.partition_point(|&j| resolved[j].wait.end_mono_ns <= start);
                list[from..]
                    .iter()
                    .copied()
                    .take_while(|&j| resolved[j].wait.end_mono_ns < end)
                    .filter(|&j| resolved[j].waiter != r.waiter)
                    .collect()
            }
            None => Vec::new(),
        };
        let object = w.object;
        let mut parts: Vec<Piece> = Vec::with_capacity(takers.len() + 1);
        let (mut holder, mut part_from, mut held_from) = (recorded, start, start);
        for &j in &takers {
            let x = &resolved[j].wait;
            let released = x.woken_at_ns().clamp(part_from, end);
            parts.push(Piece {
                wait: i,
                other: holder.0,
                other_tid: holder.1,
                span_ns: released - part_from,
                window: held_until(object, holder.0, (held_from, released.max(held_from))),
                tail_ns: 0,
                first: false,
            });
            let taker = resolved[j].waiter;
            holder = (Some(taker), tid_of(taker));
            part_from = released;
            held_from = x.end_mono_ns;
        }
        let span_ns = end - part_from;
        parts.push(Piece {
            wait: i,
            other: holder.0,
            other_tid: holder.1,
            span_ns,
            window: if takers.is_empty() {
                (held_from, woken.max(held_from))
            } else {
                held_until(object, holder.0, (held_from, woken.max(held_from)))
            },
            tail_ns: (end - woken).min(span_ns),
            first: false,
        });
        // A holder whose release came before the wait began (the next one took the lock as it
        // began) held none of it: no part. The last part stays, the wait's end being its.
        let last = parts.len() - 1;
        let mut kept = parts
            .into_iter()
            .enumerate()
            .filter(|(k, p)| p.span_ns > 0 || *k == last)
            .map(|(_, p)| p);
        if let Some(mut p) = kept.next() {
            p.first = true;
            out.push(p);
        }
        out.extend(kept);
    }
    out
}

/// A sample's category (as the thread states classified it), what it was doing (the system
/// call, else the function the user called) and the user's frame.
fn describe(stack: &super::states::SampledStack, s: &Sample) -> Described {
    let frames = &stack.frames;
    let category = stack.category;
    let syscall = s.syscall.map(|nr| syscall_name(nr, s.arg));
    let user = user_frame(frames);
    // A stack of the runtime's frames only (a sleep whose stack could not be read: only its pc
    // is known) names no user frame, rather than the C library's.
    let frame = frames.get(user).filter(|f| !is_runtime_frame(f)).cloned();
    let function = match (&syscall, s.kind) {
        (Some(name), SampleKind::Wall) => name.clone(),
        _ => {
            let i = called_frame(frames, user).unwrap_or(0);
            frames
                .get(i)
                .map(|f| match &f.function {
                    Some(n) => {
                        let q = qualified_name(n);
                        let bare = q.split('(').next().unwrap_or(q);
                        public_libc_name(bare).to_string()
                    }
                    None => f.display(),
                })
                .unwrap_or_else(|| "?".into())
        }
    };
    Described {
        category,
        function,
        frame,
        in_io_call: stack.in_io_call,
    }
}

/// Names every object of a lock edge (and of the summary's locks): a global or static lock by
/// its symbol, a heap lock by the stack that initialised it, else by its address.
pub(crate) fn name_objects(
    profile: &Profile,
    sym: &mut Symbolizer,
    summary: &Summary,
    edges: &[Edge],
    read_modules: bool,
) -> Vec<ObjectName> {
    let mut objects: Vec<u64> = edges
        .iter()
        .filter(|e| e.object != 0)
        .map(|e| e.object)
        .chain(summary.locks.iter().map(|l| l.address))
        .collect();
    objects.sort_unstable();
    objects.dedup();
    let mut data = DataSymbols::new(&profile.modules);
    let mut runtime = super::runtime_locks::RuntimeLocks::default();
    objects
        .into_iter()
        .map(|object| {
            // A lock of a language runtime, by the data object holding it (runtime_locks.json).
            if read_modules && let Some((lock, symbol)) = runtime.name(&profile.modules, object) {
                return ObjectName {
                    object,
                    name: format!("{} in {symbol}", lock.words),
                    how: "runtime",
                };
            }
            let by_symbol = if read_modules {
                data.name(object)
            } else {
                None
            };
            if let Some((module, symbol)) = by_symbol {
                // A named OpenMP critical section's lock is the program's own variable.
                if let Some(name) = symbol.strip_prefix(".gomp_critical_user_") {
                    // clang's (libomp's) variable ends in `.var`.
                    let name = name.strip_suffix(".var").unwrap_or(name);
                    return ObjectName {
                        object,
                        name: format!("`{name}` ({module})"),
                        how: "symbol",
                    };
                }
                return ObjectName {
                    object,
                    name: format!("{symbol} ({module})"),
                    how: "symbol",
                };
            }
            // A stripped runtime's private lock, by the function its waiters waited in.
            let module = profile
                .modules
                .iter()
                .rfind(|m| m.lo <= object && object < m.hi)
                .map(|m| crate::symbols::file_name(&m.path).to_string());
            if let Some(module) = module
                && let Some(lock) = summary.locks.iter().find(|l| l.address == object)
                && let Some(e) = lock
                    .sites
                    .iter()
                    .find_map(|s| super::runtime_locks::by_function(&module, &s.frames))
            {
                return ObjectName {
                    object,
                    name: e.words.clone(),
                    how: "runtime",
                };
            }
            // The unnamed critical section (libgomp's private lock: preload/omp.c names it 1).
            if object == 1
                && summary
                    .locks
                    .iter()
                    .any(|l| l.address == 1 && l.kind == "omp-critical")
            {
                return ObjectName {
                    object,
                    name: "(unnamed)".into(),
                    how: "symbol",
                };
            }
            let init = profile
                .lock_sites
                .iter()
                .filter(|l| l.address == object && l.role == LockRole::Init)
                .max_by_key(|l| l.events);
            if let Some(site) = init
                && let Some(stack) = profile.stacks.get(&site.stack)
            {
                let frames = sym.stack(stack);
                if let Some(f) = frames.get(user_frame(&frames))
                    && f.function.is_some()
                {
                    return ObjectName {
                        object,
                        name: format!("the lock initialised in {}", f.short_text()),
                        how: "init-site",
                    };
                }
            }
            ObjectName {
                object,
                name: format!("{object:#x}"),
                how: "address",
            }
        })
        .collect()
}

// ---- the critical path ----

/// A thread as the critical path sees it.
impl Knot {
    /// "producer [12]: 3 threads waited 1.2 s for it (consumer [13], ...)": the words every view
    /// gives a knot.
    pub fn words(&self, profile: &Profile) -> String {
        let names = |v: &[usize]| {
            let mut shown: Vec<String> = v
                .iter()
                .take(4)
                .map(|&i| thread_label(profile, i))
                .collect();
            if v.len() > 4 {
                shown.push(format!("{} more", v.len() - 4));
            }
            shown.join(", ")
        };
        let one = self.threads.len() == 1;
        format!(
            "{}: {} other thread{} waited {} for {} ({}); {} waits on no thread outside",
            names(&self.threads),
            self.waiters.len(),
            if self.waiters.len() == 1 { "" } else { "s" },
            crate::util::fmt_ns(self.waited_ns),
            if one { "it" } else { "them" },
            names(&self.waiters),
            if one { "it" } else { "the group" },
        )
    }
}

/// An edge joins the wait-for graph of the knots when its waits add up to at least the run's
/// wall time divided by this (1%): a stray short wait does not tie two threads together.
const KNOT_EDGE_SHARE_OF_WALL: u64 = 100;

/// The knots of the graph whose nodes are the `nthreads` threads and whose edges go from a
/// waiter to the thread it waited for (lock owner, waker), each with at least `min_ns` of waits.
/// Joins are left out: main waiting for its workers to end is how a program ends, not a knot.
/// The knots are the strongly connected components without an edge out that some edge comes in to.
pub fn knots(edges: &[Edge], nthreads: usize, min_ns: u64) -> Vec<Knot> {
    let mut out_edges: Vec<Vec<(usize, u64)>> = vec![Vec::new(); nthreads];
    for e in edges {
        if let Some(o) = e.other
            && o != e.waiter
            && e.waiter < nthreads
            && o < nthreads
            && e.kind != Some(WaitKind::Join)
            && e.wait_ns >= min_ns.max(1)
        {
            out_edges[e.waiter].push((o, e.wait_ns));
        }
    }
    let component = strongly_connected(&out_edges);
    let ncomp = component.iter().copied().max().map_or(0, |m| m + 1);
    let mut leaves = vec![false; ncomp];
    let mut waited = vec![0u64; ncomp];
    let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); ncomp];
    for (w, outs) in out_edges.iter().enumerate() {
        for &(o, ns) in outs {
            let (cw, co) = (component[w], component[o]);
            if cw != co {
                leaves[cw] = true;
                waited[co] += ns;
                if !waiters[co].contains(&w) {
                    waiters[co].push(w);
                }
            }
        }
    }
    let mut knots: Vec<Knot> = (0..ncomp)
        .filter(|&c| !leaves[c] && waited[c] > 0)
        .map(|c| {
            let mut w = waiters[c].clone();
            w.sort_unstable();
            Knot {
                threads: (0..nthreads).filter(|&t| component[t] == c).collect(),
                waiters: w,
                waited_ns: waited[c],
            }
        })
        .collect();
    knots.sort_by(|a, b| {
        b.waited_ns
            .cmp(&a.waited_ns)
            .then(a.threads.cmp(&b.threads))
    });
    knots
}

/// Each node's strongly connected component (Kosaraju, without recursion: thread counts can be
/// large).
fn strongly_connected(out_edges: &[Vec<(usize, u64)>]) -> Vec<usize> {
    let n = out_edges.len();
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for root in 0..n {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&(w, _)) = out_edges[v].get(*next) {
                *next += 1;
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    let mut in_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, outs) in out_edges.iter().enumerate() {
        for &(w, _) in outs {
            in_edges[w].push(v);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut count = 0;
    for &root in order.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        component[root] = count;
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            for &w in &in_edges[v] {
                if component[w] == usize::MAX {
                    component[w] = count;
                    stack.push(w);
                }
            }
        }
        count += 1;
    }
    component
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathThread {
    pub start_ns: u64,
    pub end_ns: u64,
    pub main: bool,
}

impl PathThread {
    fn of(profile: &Profile, t: &ThreadStats) -> PathThread {
        PathThread {
            start_ns: t.start_mono_ns,
            end_ns: profile.thread_end_ns(t),
            main: t.flags & THREAD_MAIN != 0 && t.folded.is_none(),
        }
    }
}

/// A wait as the critical path sees it: the waiting thread and the one that woke it (or held
/// the lock), by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathWait {
    pub thread: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub other: Option<usize>,
    pub kind: WaitKind,
}

/// The critical path (Perfetto's rule, on the recorded waits): start where the run ends, on the
/// main thread (else the thread that ends last); walking back in time, a stretch where the
/// current thread did not wait is its own; where it waited for a known thread, the path goes on
/// in that thread from the moment the wait ended; where the other end is unknown, the wait is on
/// the path and the walk stays on the thread. Before a thread's start the path goes on in the
/// main thread (which created it, as far as the profile knows).
pub fn critical_path(threads: &[PathThread], waits: &[PathWait]) -> CriticalPath {
    let mut by_thread: Vec<Vec<&PathWait>> = vec![Vec::new(); threads.len()];
    for w in waits {
        if w.thread < threads.len() && w.start_ns < w.end_ns {
            by_thread[w.thread].push(w);
        }
    }
    for list in &mut by_thread {
        list.sort_by_key(|w| (w.end_ns, w.start_ns));
    }
    let main = threads.iter().position(|t| t.main);
    let Some(mut cur) = main.or_else(|| {
        threads
            .iter()
            .enumerate()
            .max_by_key(|(_, t)| t.end_ns)
            .map(|(i, _)| i)
    }) else {
        return CriticalPath::default();
    };
    let mut t = threads[cur].end_ns;
    let mut segments: Vec<PathSegment> = Vec::new();
    let mut jumped_at: Option<u64> = None;
    let push = |segments: &mut Vec<PathSegment>, thread, start: u64, end: u64, waiting| {
        if end > start {
            segments.push(PathSegment {
                thread,
                start_ns: start,
                end_ns: end,
                waiting,
                asleep: false,
            });
        }
    };
    for _ in 0..1_000_000 {
        let th = threads[cur];
        // The wait of `cur` that ended last before t (and began before it).
        let list = &by_thread[cur];
        let n = list.partition_point(|w| w.end_ns <= t);
        let straddling = list[n..]
            .iter()
            .filter(|w| w.start_ns < t)
            .max_by_key(|w| w.start_ns);
        let candidate = straddling.copied().or_else(|| {
            list[..n]
                .iter()
                .rev()
                .find(|w| w.start_ns < t && w.end_ns > th.start_ns)
                .copied()
        });
        let Some(w) = candidate.filter(|w| w.end_ns > th.start_ns || w.start_ns < t) else {
            push(&mut segments, cur, th.start_ns.min(t), t, None);
            t = th.start_ns.min(t);
            match main {
                Some(m) if m != cur && threads[m].start_ns < t => {
                    cur = m;
                    continue;
                }
                _ => break,
            }
        };
        let end = w.end_ns.min(t);
        push(&mut segments, cur, end, t, None);
        let other = w.other.filter(|&o| {
            o < threads.len() && o != cur && threads[o].start_ns < end && jumped_at != Some(end)
        });
        match other {
            Some(o) => {
                jumped_at = Some(end);
                cur = o;
                t = end;
            }
            None => {
                let start = w.start_ns.max(th.start_ns);
                push(&mut segments, cur, start, end, Some(w.kind));
                t = start;
                jumped_at = None;
            }
        }
        if t <= threads[cur].start_ns && main.is_none_or(|m| m == cur) {
            break;
        }
    }
    segments.reverse();
    let by_thread = super::path_asleep::by_thread(&segments);
    CriticalPath {
        length_ns: segments.iter().map(|s| s.end_ns - s.start_ns).sum(),
        segments,
        by_thread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parked_threads_own_words_count_for_the_lock_they_stand_for() {
        let edge = |waiter, other, object, wait_ns| Edge {
            waiter,
            other: Some(other),
            kind: Some(WaitKind::Futex),
            object,
            waits: 10,
            waits_begun: 10,
            wait_ns,
            woken_tail_ns: wait_ns / 2,
            ..Edge::default()
        };
        // Two threads parked on their own words (0x20, 0x30) for the lock listed at 0x20.
        let edges = [edge(0, 1, 0x20, 100), edge(1, 0, 0x30, 300)];
        let lock_of: HashMap<u64, u64> = [(0x20, 0x20), (0x30, 0x20)].into();
        let all = holder_times(&edges, &lock_of);
        let h = &all[&0x20];
        assert_eq!(
            (all.len(), h.waits, h.wait_ns, h.woken_tail_ns),
            (1, 20, 400, 200)
        );
        assert_eq!((h.waiters.len(), h.holders.len()), (2, 2));
        // Without the map, each word on its own.
        assert_eq!(holder_times(&edges, &HashMap::new()).len(), 2);
    }

    /// A mutex wait of `thread` (ResolvedWait), woken `tail` ns before its end (0: unknown).
    fn mutex_wait(
        thread: usize,
        start: u64,
        end: u64,
        owner: Option<usize>,
        tail: u64,
    ) -> ResolvedWait {
        ResolvedWait {
            waiter: thread,
            other: owner,
            wait: Wait {
                serial: thread as u32 + 1,
                start_mono_ns: start,
                end_mono_ns: end,
                object: 0x40,
                other_tid: owner.map(|o| 100 + o as u32),
                kind: WaitKind::Lock,
                lock_kind: Some(LockKind::Mutex),
                notification: None,
                rewait: false,
                woken_before_end_ns: (tail > 0).then_some(tail),
            },
        }
    }

    /// A part as (wait, other, span, window, tail, first).
    type Part = (usize, Option<usize>, u64, (u64, u64), u64, bool);

    fn parts(resolved: &[ResolvedWait]) -> Vec<Part> {
        holder_pieces(resolved, |i| Some(100 + i as u32))
            .into_iter()
            .map(|p| (p.wait, p.other, p.span_ns, p.window, p.tail_ns, p.first))
            .collect()
    }

    #[test]
    fn a_mutex_wait_is_cut_where_other_waiters_took_the_lock() {
        // Thread 0 waits 100-1000 while 1 holds the mutex; 1 releases at 400, waking 2 (which
        // waited 200-500); 2 releases at 950, waking 0. 1's time after 400 (asleep, elsewhere) is
        // not what 0 waited for; 2's hold from 500 is, the wake-up 400-500 with it.
        let waits = [
            mutex_wait(0, 100, 1000, Some(1), 50),
            mutex_wait(2, 200, 500, Some(1), 100),
        ];
        assert_eq!(
            parts(&waits),
            [
                (0, Some(1), 300, (100, 400), 0, true),
                (0, Some(2), 600, (500, 950), 50, false),
                (1, Some(1), 300, (200, 400), 100, true),
            ]
        );
        // The parts of a wait add up to it, and the critical path's releaser is the last holder.
        let p = holder_pieces(&waits, |i| Some(i as u32));
        assert_eq!(
            p.iter()
                .filter(|p| p.wait == 0)
                .map(|p| p.span_ns)
                .sum::<u64>(),
            900
        );
        assert_eq!(p.iter().rfind(|p| p.wait == 0).unwrap().other_tid, Some(2));
    }

    #[test]
    fn a_holder_waiting_for_the_mutex_again_no_longer_holds_it() {
        // As above, but 1 waits for the mutex again from 300: it let go before then.
        let waits = [
            mutex_wait(0, 100, 1000, Some(1), 50),
            mutex_wait(2, 200, 500, Some(1), 100),
            mutex_wait(1, 300, 1100, Some(2), 0),
        ];
        let p = parts(&waits);
        assert_eq!(p[0], (0, Some(1), 300, (100, 300), 0, true));
        assert_eq!(p[1], (0, Some(2), 600, (500, 950), 50, false));
    }

    #[test]
    fn a_wait_is_cut_only_by_other_threads_acquisitions_of_the_same_mutex() {
        let mut other_lock = mutex_wait(2, 200, 500, Some(1), 0);
        other_lock.wait.object = 0x80;
        let mut rwlock = mutex_wait(3, 200, 600, Some(1), 0);
        rwlock.wait.lock_kind = Some(LockKind::RwlockWrite);
        let waits = [mutex_wait(0, 100, 1000, Some(1), 0), other_lock, rwlock];
        assert_eq!(parts(&waits)[0], (0, Some(1), 900, (100, 1000), 0, true));
        assert_eq!(parts(&waits).len(), 3);
        // The waiter's own earlier acquisition (another wait of thread 0) does not cut it.
        let waits = [
            mutex_wait(0, 100, 1000, Some(1), 0),
            mutex_wait(0, 10, 150, Some(1), 0),
        ];
        assert_eq!(parts(&waits)[0], (0, Some(1), 900, (100, 1000), 0, true));
    }

    #[test]
    fn a_holder_that_released_before_the_wait_began_holds_no_part_of_it() {
        // 2's wait ended at 150, woken at 90: the lock was already on its way to 2 when 0 began.
        let waits = [
            mutex_wait(0, 100, 1000, Some(1), 0),
            mutex_wait(2, 50, 150, Some(1), 60),
        ];
        assert_eq!(parts(&waits)[0], (0, Some(2), 900, (150, 1000), 0, true));
    }

    fn edge(waiter: usize, other: usize, kind: WaitKind, wait_ns: u64) -> Edge {
        Edge {
            waiter,
            other: Some(other),
            kind: Some(kind),
            wait_ns,
            ..Edge::default()
        }
    }

    #[test]
    fn knots_are_the_groups_others_wait_for_that_wait_on_no_one_outside() {
        use WaitKind::*;
        // 1 and 2 wait for the producer 0; 3 and 4 wait for each other (a lock passed back and
        // forth) and for 0; main (5) joins everyone; 6 waited briefly on 3.
        let edges = [
            edge(1, 0, Condition, 500),
            edge(2, 0, Condition, 400),
            edge(3, 4, Lock, 300),
            edge(4, 3, Lock, 300),
            edge(3, 0, Condition, 100),
            edge(5, 1, Join, 900),
            edge(6, 3, Lock, 5),
        ];
        let k = knots(&edges, 7, 10);
        assert_eq!(k.len(), 1, "{k:?}");
        assert_eq!(k[0].threads, vec![0]);
        assert_eq!(k[0].waiters, vec![1, 2, 3]);
        assert_eq!(k[0].waited_ns, 1000);
        // Without the producer, the pair that waits for each other is a knot of two.
        let pair = knots(&edges[2..4], 7, 10);
        assert!(
            pair.is_empty(),
            "nobody outside waits for the pair: {pair:?}"
        );
        let k = knots(
            &[edges[2].clone(), edges[3].clone(), edge(6, 3, Lock, 50)],
            7,
            10,
        );
        assert_eq!(k[0].threads, vec![3, 4]);
        assert_eq!(k[0].waiters, vec![6]);
    }

    fn thread(start: u64, end: u64, main: bool) -> PathThread {
        PathThread {
            start_ns: start,
            end_ns: end,
            main,
        }
    }

    fn wait(thread: usize, start: u64, end: u64, other: Option<usize>, kind: WaitKind) -> PathWait {
        PathWait {
            thread,
            start_ns: start,
            end_ns: end,
            other,
            kind,
        }
    }

    #[test]
    fn the_path_follows_who_woke_whom_back_to_the_start() {
        // main (0) runs 0-10, starts a producer (1) and a consumer (2), joins the consumer
        // (10-100). The consumer waits for the producer's items twice (20-50, 60-90); the
        // producer runs 10-95 without waiting.
        let threads = [
            thread(0, 100, true),
            thread(10, 95, false),
            thread(10, 98, false),
        ];
        let waits = [
            wait(0, 10, 98, Some(2), WaitKind::Join),
            wait(2, 20, 50, Some(1), WaitKind::Condition),
            wait(2, 60, 90, Some(1), WaitKind::Condition),
        ];
        let path = critical_path(&threads, &waits);
        let shape: Vec<(usize, u64, u64)> = path
            .segments
            .iter()
            .map(|s| (s.thread, s.start_ns, s.end_ns))
            .collect();
        // Back from 100 on main: its own 98-100; the join was ended by the consumer at 98: the
        // consumer's own 90-98; its wait was ended by the producer at 90: the producer runs
        // back to its start at 10; then main, which created it, 0-10.
        assert_eq!(
            shape,
            vec![(0, 0, 10), (1, 10, 90), (2, 90, 98), (0, 98, 100)]
        );
        assert_eq!(path.length_ns, 100);
        assert_eq!(path.by_thread[0], (1, 80, 0));
        assert!(path.segments.iter().all(|s| s.waiting.is_none()));
    }

    #[test]
    fn a_wait_without_a_known_waker_stays_on_the_thread() {
        let threads = [thread(0, 100, true)];
        let waits = [wait(0, 30, 70, None, WaitKind::Semaphore)];
        let path = critical_path(&threads, &waits);
        let shape: Vec<_> = path
            .segments
            .iter()
            .map(|s| (s.start_ns, s.end_ns, s.waiting))
            .collect();
        assert_eq!(
            shape,
            vec![
                (0, 30, None),
                (30, 70, Some(WaitKind::Semaphore)),
                (70, 100, None)
            ]
        );
        assert_eq!(path.by_thread, vec![(0, 60, 40)]);
    }

    #[test]
    fn two_threads_waking_each_other_at_one_instant_do_not_loop() {
        let threads = [thread(0, 100, true), thread(0, 100, false)];
        let waits = [
            wait(0, 40, 50, Some(1), WaitKind::Lock),
            wait(1, 45, 50, Some(0), WaitKind::Lock),
        ];
        let path = critical_path(&threads, &waits);
        assert_eq!(path.length_ns, 100);
        let total: u64 = path.segments.iter().map(|s| s.end_ns - s.start_ns).sum();
        assert_eq!(total, 100);
    }
}
