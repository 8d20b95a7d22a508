//! Futex words (waits the interposer saw through `syscall(SYS_futex)`): what each word is, from
//! the runtime entry point its waiters' stacks pass through (`runtime_waits.json`), else from
//! what the threads did with it (a word of a thread's own in a runtime's shared library is a lock
//! when the threads waiting there woke each other, named by the library: `lock in libtbb`); the
//! words that are locks join the lock list under the runtime's name, grouped by the user's frame
//! where the runtime parks each thread on a word of its own; the others (conditions, parks, idle
//! workers) leave it. One classification, read by the thread states, the findings and every
//! view. OpenMP's entries of the lock table (preload/omp.c) are sorted here too: critical
//! sections and omp locks are runtime locks, regions leave the lock list for
//! `Summary::omp_regions`; so are the objects runtimes reported through ITT (preload/itt.c, kind
//! `itt-sync`): runtime locks named by their waiters' stacks.

use super::runtime::{self, Role};
use super::summary::{LockSummary, Summary};
use crate::profile::Profile;
use crate::profile::format::{LockKind, WaitKind};
use crate::symbols::Frame;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A lock of a runtime that waits on futex words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeLock {
    /// `Rust std`, `parking_lot`, ... (empty: no entry point named it).
    pub runtime: String,
    /// What the runtime calls it: `std::sync::Mutex`, `parking_lot::Mutex`, `futex word` (a
    /// program's own lock on a futex word).
    pub object: String,
    /// How many futex words it stands for (parked threads' own words, grouped).
    pub words: usize,
    /// The user's frame that took it, where the runtime parks threads on their own words (the
    /// lock's address is then not known).
    pub taken_at: Option<Frame>,
}

/// What one futex word is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub role: Role,
    pub runtime: String,
    pub object: String,
}

/// Every futex word seen, by address.
#[derive(Debug, Clone, Default)]
pub struct Words {
    pub by_address: HashMap<u64, Word>,
    /// A TBB mutex reported its acquisitions through ITT (lock kind `itt-sync`): CPU time inside
    /// such an acquisition is waiting for that lock, not spinning of its own.
    pub itt_tbb_locks: bool,
    /// A parked thread's own word (parking_lot, abseil) -> the address of the lock it stands for
    /// in the lock list, where its words were grouped by the user's frame.
    pub lock_of: HashMap<u64, u64>,
}

impl Words {
    pub fn get(&self, address: u64) -> Option<&Word> {
        self.by_address.get(&address)
    }

    /// Whether a recorded wait is a lock wait the hooks timed, one that counts in the thread's
    /// lock wait exactly: a pthread lock's, or a futex wait on a word that is a lock.
    pub fn is_timed_lock_wait(&self, w: &crate::profile::samples::Wait) -> bool {
        use crate::profile::samples::WaitKind;
        match w.kind {
            WaitKind::Lock => true,
            WaitKind::Futex => self.get(w.object).is_some_and(|x| x.role == Role::Lock),
            _ => false,
        }
    }
}

const FUTEX: &str = "futex";

/// The types of the objects oneTBB reports through ITT (built with TBB_USE_PROFILING_TOOLS), by
/// the member functions its waiters' stacks pass through (inlined from its headers).
const TBB_ITT_OBJECTS: &[(&str, &str)] = &[
    (
        "tbb::detail::d1::queuing_rw_mutex::*",
        "tbb::queuing_rw_mutex",
    ),
    ("tbb::detail::d1::queuing_mutex::*", "tbb::queuing_mutex"),
    ("tbb::detail::d1::spin_rw_mutex*", "tbb::spin_rw_mutex"),
    ("tbb::detail::d1::spin_mutex::*", "tbb::spin_mutex"),
    ("tbb::detail::d1::rw_mutex::*", "tbb::rw_mutex"),
    ("tbb::detail::d1::mutex::*", "tbb::mutex"),
];

/// The type of a TBB mutex whose acquisition (not release) `function` is part of.
fn tbb_acquisition(function: &str) -> Option<&'static str> {
    let name = runtime::plain_name(function);
    if name.ends_with("release") || name.ends_with("unlock") || name.contains("::~") {
        return None;
    }
    TBB_ITT_OBJECTS
        .iter()
        .find(|(pattern, _)| super::states::glob(pattern, &name))
        .map(|(_, object)| *object)
}

/// Whether a stack is inside the acquisition of a TBB mutex (its inlined frames).
pub fn in_tbb_acquisition(frames: &[Frame]) -> bool {
    frames
        .iter()
        .any(|f| f.function.as_deref().and_then(tbb_acquisition).is_some())
}

/// What an object reported through ITT (lock kind `itt-sync`) is: a TBB type by its waiters'
/// frames, TBB's when a frame is in libtbb, else a program's own ITT annotation.
fn itt_object(lock: &LockSummary) -> RuntimeLock {
    let frames = || lock.sites.iter().flat_map(|s| s.frames.iter());
    let typed = frames().find_map(|f| {
        let name = runtime::plain_name(f.function.as_deref()?);
        TBB_ITT_OBJECTS
            .iter()
            .find(|(pattern, _)| super::states::glob(pattern, &name))
            .map(|(_, object)| *object)
    });
    let tbb = typed.is_some()
        || frames().any(|f| crate::symbols::file_name(&f.module).starts_with("libtbb"));
    RuntimeLock {
        runtime: if tbb { "TBB" } else { "ITT" }.into(),
        object: typed
            .unwrap_or(if tbb {
                "a TBB synchronization object"
            } else {
                "an ITT sync object"
            })
            .into(),
        words: 1,
        taken_at: None,
    }
}

/// Per futex word, the tids that waited on it and the tids whose wake ended a wait on it, and
/// how many of its waits each waker's wake ended, from the wait records, gathered in one pass.
#[derive(Default)]
struct Parties {
    by_word: HashMap<u64, (HashSet<u32>, HashSet<u32>)>,
    woken_by: HashMap<u64, HashMap<u32, u64>>,
}

impl Parties {
    fn get(&self, address: &u64) -> Option<&(HashSet<u32>, HashSet<u32>)> {
        self.by_word.get(address)
    }
}

fn futex_parties(profile: &Profile) -> Parties {
    let tid_of: HashMap<u32, u32> = profile.threads.iter().map(|t| (t.serial, t.tid)).collect();
    let mut parties = Parties::default();
    for w in profile.waits.iter().filter(|w| w.kind == WaitKind::Futex) {
        let (waiters, wakers) = parties.by_word.entry(w.object).or_default();
        if let Some(&tid) = tid_of.get(&w.serial) {
            waiters.insert(tid);
        }
        if let Some(tid) = w.other_tid {
            wakers.insert(tid);
            *parties
                .woken_by
                .entry(w.object)
                .or_default()
                .entry(tid)
                .or_default() += 1;
        }
    }
    parties
}

/// What a word is when no runtime entry point names it, from what the threads did: a word that
/// a thread woke and also waited on, or that several threads waited on with no waker seen, is a
/// lock (its holders hand it to each other); one whose wakers never wait on it is an event.
fn role_by_behaviour(parties: &Parties, address: u64, waiter_threads: usize) -> Role {
    let none = (HashSet::new(), HashSet::new());
    let (waiters, wakers) = parties.get(&address).unwrap_or(&none);
    if wakers.iter().any(|t| waiters.contains(t)) || (wakers.is_empty() && waiter_threads >= 2) {
        Role::Lock
    } else {
        Role::Wait
    }
}

/// What a futex word no runtime entry point names is, when the threads used it as a lock.
struct ByBehaviour {
    runtime: String,
    object: String,
    /// The word is a parked thread's own: grouped with the others by where the lock was taken.
    per_thread: bool,
    /// Where the program called the runtime's library to take it.
    taken_at: Option<Frame>,
}

/// A wait inside a runtime's library called from the program's code: the library's frame (the
/// innermost in one) and the frame that called it (the user's frame, else the first frame
/// outside every runtime module: a program without debug info whose lambda is named by the
/// `std::thread` template it was inlined into).
struct LibrarySite<'a> {
    library: &'static runtime::Library,
    file: String,
    caller: &'a Frame,
}

impl LibrarySite<'_> {
    fn key(&self) -> (String, String) {
        (self.file.clone(), self.caller.display())
    }
}

/// Whether a frame lies in a runtime's module (whatever its name says).
fn in_runtime_module(f: &Frame) -> bool {
    crate::symbols::is_runtime_frame(&Frame {
        function: None,
        file: None,
        line: None,
        ..f.clone()
    })
}

/// The first of a word's waiting sites (most waiting first) that is inside a runtime library
/// called from the program's code; None for a runtime's own thread waiting in its loop (no
/// frame of the program on its stack), or a wait in no runtime library.
fn library_site(lock: &LockSummary) -> Option<LibrarySite<'_>> {
    lock.sites.iter().find_map(|s| {
        let (library, at) = runtime::library_in(&s.frames)?;
        Some(LibrarySite {
            library,
            file: crate::symbols::file_name(&s.frames[at].module).to_string(),
            caller: &s.frames[caller_index(s)?],
        })
    })
}

/// The frame of a waiting site inside a runtime library that called the library: its user
/// frame where that is the program's, else the first frame past the library outside every
/// runtime module.
fn caller_index(s: &super::sites::LockSiteSummary) -> Option<usize> {
    let (_, at) = runtime::library_in(&s.frames)?;
    if s.user_frame()
        .is_some_and(|f| !crate::symbols::is_runtime_frame(f))
    {
        return Some(s.user);
    }
    (at..s.frames.len()).find(|&i| !in_runtime_module(&s.frames[i]))
}

/// Per (library, calling frame) of words waited on inside a runtime library called from the
/// program: the wake-ended waits whose waker also waited there, and those whose waker did not.
struct LibraryGroups {
    by_key: HashMap<(String, String), (u64, u64)>,
}

impl LibraryGroups {
    fn new(parties: &Parties, words: &[(u64, Option<(String, String)>)]) -> LibraryGroups {
        let mut waiters: HashMap<&(String, String), HashSet<u32>> = HashMap::new();
        for (address, key) in words {
            if let (Some(key), Some((w, _))) = (key, parties.get(address)) {
                waiters.entry(key).or_default().extend(w.iter().copied());
            }
        }
        let mut by_key: HashMap<(String, String), (u64, u64)> = HashMap::new();
        for (address, key) in words {
            let Some(here) = key.as_ref().and_then(|k| waiters.get(k)) else {
                continue;
            };
            let entry = by_key.entry(key.clone().unwrap_or_default()).or_default();
            for (tid, n) in parties.woken_by.get(address).into_iter().flatten() {
                if here.contains(tid) {
                    entry.0 += n;
                } else {
                    entry.1 += n;
                }
            }
        }
        LibraryGroups { by_key }
    }

    /// Whether the threads waiting at `key` were woken mostly by each other: each released to
    /// another what it had waited for there (a lock handed over, the waker its holder), not by a
    /// thread that never waits there (an event, a producer, work handed to an idle worker).
    fn handed_over(&self, key: &(String, String)) -> bool {
        self.by_key
            .get(key)
            .is_some_and(|&(mutual, other)| mutual > 0 && mutual >= other)
    }
}

/// Whether a futex word that no runtime entry point names was a lock, from what the threads did
/// with it, and what to call it: a word a thread woke and also waited on (or that several threads
/// waited on with no waker seen) is a lock; inside a runtime library called from the program's
/// code, a word of the waiting thread's own whose waiters there were woken by each other is a
/// lock that library parks its waiters on (abseil's Mutex, oneTBB's mutex). Named by the library
/// it lies in (`lock in libabsl_synchronization`, runtime `abseil`), never by a function's name.
fn by_behaviour(
    parties: &Parties,
    groups: &LibraryGroups,
    lock: &LockSummary,
) -> Option<ByBehaviour> {
    let site = library_site(lock);
    let named = |per_thread: bool| ByBehaviour {
        runtime: site
            .as_ref()
            .map_or(String::new(), |s| s.library.runtime.clone()),
        object: site.as_ref().map_or("futex word".into(), |s| {
            runtime::Library::lock_words(&s.file)
        }),
        per_thread,
        taken_at: site.as_ref().map(|s| s.caller.clone()),
    };
    if role_by_behaviour(parties, lock.address, lock.threads) == Role::Lock {
        return Some(named(false));
    }
    groups
        .handed_over(&site.as_ref()?.key())
        .then(|| named(true))
}

/// Classifies the futex words of `summary.locks`, moves those that are not locks out of it,
/// groups parked threads' words by the user frame that took the lock, and counts the lock waits
/// in each thread's lock wait.
pub fn classify(profile: &Profile, summary: &mut Summary) -> Words {
    let mut words = Words::default();
    // Who waited on and woke each word: gathered once, when a word needs it.
    let mut parties: Option<Parties> = None;
    let mut library_groups: Option<LibraryGroups> = None;
    let locks = std::mem::take(&mut summary.locks);
    // Each futex word's waiting sites (for the groups of words by library and user frame).
    let locks_sites: Vec<(u64, Option<(String, String)>)> = locks
        .iter()
        .filter(|l| l.kind == FUTEX)
        .map(|l| (l.address, library_site(l).map(|s| s.key())))
        .collect();
    let mut kept: Vec<LockSummary> = Vec::with_capacity(locks.len());
    // Per-thread words of one runtime object, keyed by (object, user frame).
    let mut grouped: BTreeMap<(String, String), LockSummary> = BTreeMap::new();
    let mut members: BTreeMap<(String, String), Vec<u64>> = BTreeMap::new();
    for mut lock in locks {
        match lock.kind {
            "omp-region" | "omp-region-site" => {
                summary.omp_regions.push(super::summary::OmpRegion {
                    address: lock.address,
                    call_site: lock.kind == "omp-region-site",
                    frame: None,
                    merged: Vec::new(),
                    runs: lock.acquisitions,
                    members: lock.contended,
                    wall_ns: lock.hold_ns,
                    barrier_ns: lock.wait_ns,
                    fork_join_ns: lock.max_wait_ns,
                });
                continue;
            }
            "omp-critical" | "omp-lock" => {
                lock.runtime = Some(RuntimeLock {
                    runtime: "OpenMP".into(),
                    object: if lock.kind == "omp-lock" {
                        "omp lock".into()
                    } else {
                        "critical section".into()
                    },
                    words: 1,
                    taken_at: None,
                });
                kept.push(lock);
                continue;
            }
            "itt-sync" => {
                let object = itt_object(&lock);
                words.itt_tbb_locks |= object.object.starts_with("tbb::");
                lock.runtime = Some(object);
                kept.push(lock);
                continue;
            }
            FUTEX => {}
            _ => {
                kept.push(lock);
                continue;
            }
        }
        // The entry point of the stack with the most waiting decides (sites come most first).
        let entry = lock
            .sites
            .iter()
            .find_map(|s| runtime::wait_of(&s.frames).map(|(e, _)| (e, s)));
        // A module's entry is a guess from where the wait is (libtbb's idle workers); what the
        // threads did with the word overrides it when they used it as a lock.
        let named = entry.filter(|(e, _)| !e.by_module());
        let parties = parties.get_or_insert_with(|| futex_parties(profile));
        let (word, per_thread, taken_at) = match named {
            Some((e, s)) => (
                Word {
                    role: e.role,
                    runtime: e.runtime.clone(),
                    object: e.object.clone(),
                },
                e.per_thread,
                s.user_frame().cloned(),
            ),
            None => {
                let guess = entry.map(|(e, _)| e);
                let behaviour = by_behaviour(
                    parties,
                    library_groups.get_or_insert_with(|| LibraryGroups::new(parties, &locks_sites)),
                    &lock,
                );
                match behaviour {
                    Some(b) => {
                        // Its waiters' sites are where the program called the library (a
                        // program without debug info has no named frame of its own there).
                        for site in lock.sites.iter_mut() {
                            if let Some(i) = caller_index(site) {
                                site.user = i;
                            }
                        }
                        (
                            Word {
                                role: Role::Lock,
                                runtime: b.runtime.clone(),
                                object: b.object.clone(),
                            },
                            b.per_thread,
                            b.taken_at,
                        )
                    }
                    None => match guess {
                        Some(e) => (
                            Word {
                                role: e.role,
                                runtime: e.runtime.clone(),
                                object: e.object.clone(),
                            },
                            false,
                            None,
                        ),
                        None => (
                            Word {
                                role: Role::Wait,
                                runtime: String::new(),
                                object: "futex word".into(),
                            },
                            false,
                            None,
                        ),
                    },
                }
            }
        };
        words.by_address.insert(lock.address, word.clone());
        if word.role != Role::Lock {
            continue;
        }

        lock.runtime = Some(RuntimeLock {
            runtime: word.runtime.clone(),
            object: word.object.clone(),
            words: 1,
            taken_at: if per_thread { taken_at.clone() } else { None },
        });
        if !per_thread {
            kept.push(lock);
            continue;
        }
        let key = (
            word.object.clone(),
            taken_at.as_ref().map(Frame::display).unwrap_or_default(),
        );
        members.entry(key.clone()).or_default().push(lock.address);
        match grouped.get_mut(&key) {
            None => {
                grouped.insert(key, lock);
            }
            Some(g) => {
                g.acquisitions = g.acquisitions.saturating_add(lock.acquisitions);
                g.contended = g.contended.saturating_add(lock.contended);
                g.wait_ns = g.wait_ns.saturating_add(lock.wait_ns);
                g.max_wait_ns = g.max_wait_ns.max(lock.max_wait_ns);
                g.threads = g.threads.saturating_add(lock.threads);
                g.address = g.address.min(lock.address);
                g.sites.extend(lock.sites);
                if let Some(r) = g.runtime.as_mut() {
                    r.words += 1;
                }
            }
        }
    }
    for (key, mut g) in grouped {
        for &word in members.get(&key).into_iter().flatten() {
            words.lock_of.insert(word, g.address);
        }
        g.sites
            .sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(b.samples.cmp(&a.samples)));
        kept.push(g);
    }
    kept.sort_by(|a, b| {
        b.wait_ns
            .cmp(&a.wait_ns)
            .then(b.acquisitions.cmp(&a.acquisitions))
    });
    summary.locks = kept;

    // Each thread's waits on lock words are lock waits, like its pthread lock waits.
    let records = super::threads::by_serial(&profile.threads, |t| t.serial);
    for ts in summary.threads.iter_mut() {
        let Some(t) = records.get(&ts.serial) else {
            continue;
        };
        let extra: u64 = t
            .locks
            .iter()
            .filter(|l| {
                l.kind == LockKind::Futex
                    && words.get(l.address).is_some_and(|w| w.role == Role::Lock)
            })
            .map(|l| profile.ticks_to_ns(l.wait_ticks))
            .sum();
        ts.lock_wait_ns = ts.lock_wait_ns.saturating_add(extra).min(ts.wall_ns);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word, the one thread that waited on it, and how many of its waits each waker ended.
    type WordWaits<'a> = (u64, u32, &'a [(u32, u64)]);

    /// Parties of words each waited on by one thread.
    fn parties(words: &[WordWaits]) -> Parties {
        let mut p = Parties::default();
        for &(word, waiter, woken) in words {
            let (waiters, wakers) = p.by_word.entry(word).or_default();
            waiters.insert(waiter);
            for &(tid, n) in woken {
                wakers.insert(tid);
                p.woken_by.entry(word).or_default().insert(tid, n);
            }
        }
        p
    }

    #[test]
    fn parked_waiters_that_woke_each_other_handed_a_lock_over() {
        let at = |place: &str| Some(("libtbb.so.12".to_string(), place.to_string()));
        // Two threads each parked on a word of its own where the program took the lock, each
        // woken by the other's release: a lock (the waker was the holder).
        let p = parties(&[(0x10, 1, &[(2, 40)]), (0x20, 2, &[(1, 35)])]);
        let g = LibraryGroups::new(&p, &[(0x10, at("add")), (0x20, at("add"))]);
        assert!(g.handed_over(&at("add").unwrap()));
        // Consumers woken by a producer that never waits where they do: an event.
        let p = parties(&[(0x10, 1, &[(3, 40)]), (0x20, 2, &[(3, 35)])]);
        let g = LibraryGroups::new(&p, &[(0x10, at("pop")), (0x20, at("pop"))]);
        assert!(!g.handed_over(&at("pop").unwrap()));
        // The same threads waiting at two places, each woken from the other place (a bounded
        // queue's producer and consumer): neither place is a lock.
        let p = parties(&[(0x10, 1, &[(2, 40)]), (0x20, 2, &[(1, 35)])]);
        let g = LibraryGroups::new(&p, &[(0x10, at("push")), (0x20, at("pop"))]);
        assert!(!g.handed_over(&at("push").unwrap()) && !g.handed_over(&at("pop").unwrap()));
        // Waits with no waker seen decide nothing.
        let p = parties(&[(0x10, 1, &[]), (0x20, 2, &[])]);
        let g = LibraryGroups::new(&p, &[(0x10, at("add")), (0x20, at("add"))]);
        assert!(!g.handed_over(&at("add").unwrap()));
    }
}
