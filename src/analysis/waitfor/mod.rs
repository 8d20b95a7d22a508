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

mod activity;
mod critical;
mod objects;
mod pieces;
use activity::*;
use critical::*;
pub use critical::{PathThread, PathWait, critical_path, knots};
pub(crate) use objects::name_objects;
use pieces::*;

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

    /// The share of the holders' sampled time inside the waits spent in the activities `which`
    /// takes.
    pub fn share_where(&self, which: impl Fn(&Activity) -> bool) -> f64 {
        self.share(
            self.activities
                .iter()
                .filter(|x| which(x))
                .map(|x| x.ns)
                .sum(),
        )
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
