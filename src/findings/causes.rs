//! Findings about how a program uses its threads: thread churn (a thread per task), a
//! mostly serial program whose workers are few or short, and read-side rwlock contention (the
//! shared reader count bouncing between CPUs). Each carries a stake, as the findings of
//! `scaling.rs` do.

use super::rules::Rule;
use super::scaling::{speedup_words, with_stake};
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::states::{Category, StateReport, StateSite, ThreadStates};
use crate::analysis::threads::ThreadId;
use crate::analysis::turns::Turns;
use crate::analysis::waitfor::WaitFor;
use crate::symbols::{Frame, qualified_name, user_frame};
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};
use std::collections::HashMap;

/// A frame in words: code without symbols (a stripped program or library) is named by its
/// module, as the work other threads waited for is (`analysis::blame::Culprit::place`): one
/// cause, one name, whichever finding tells it.
fn frame_words(f: Option<&Frame>) -> String {
    match f {
        None => "an unknown frame".to_string(),
        Some(f) if f.function.is_none() && !f.module.is_empty() => {
            format!("code in {} (without symbols)", f.module_name())
        }
        Some(f) => f.display(),
    }
}

fn thread_words(t: &ThreadStates) -> String {
    format!("thread {}", ThreadId::of_states(t).label())
}

/// A frame's function without arguments or glibc's internal prefixes (`__pthread_create_2_1` is
/// `pthread_create_2_1`, `__GI___pthread_rwlock_rdlock` is `pthread_rwlock_rdlock`).
fn bare_function(f: &Frame) -> Option<&str> {
    let q = qualified_name(f.function.as_deref()?);
    let bare = q.split('(').next().unwrap_or(q);
    Some(crate::analysis::states::public_libc_name(bare))
}

/// A thread's time on a CPU: the kernel's figure when the profile has it, else its samples'.
fn cpu_of(t: &ThreadStates) -> u64 {
    t.kernel.map_or_else(|| t.awake_ns(), |k| k.exec_ns)
}

// ---- thread churn ----

/// Per thread (of those `keep` accepts; 0 for the others), its CPU time (by CPU samples) inside
/// any of `functions`, and the user frame with the most of it.
fn cpu_in_functions(
    r: &StateReport,
    keep: impl Fn(&ThreadStates) -> bool,
    functions: &[String],
) -> (Vec<u64>, Option<Frame>) {
    let mut per_thread = vec![0u64; r.threads.len()];
    let mut by_frame: HashMap<String, (Frame, u64)> = HashMap::new();
    let mut inside: HashMap<u32, Option<Frame>> = HashMap::new();
    for (ti, t) in r.threads.iter().enumerate().filter(|(_, t)| keep(t)) {
        for &(_, w, shape) in &t.cpu_marks {
            let frame = inside.entry(shape).or_insert_with(|| {
                let s = r.stacks.get(shape as usize)?;
                let hit = s.category != Category::Profiler
                    && s.frames.iter().any(|f| {
                        bare_function(f).is_some_and(|n| functions.iter().any(|x| x == n))
                    });
                hit.then(|| s.frames[user_frame(&s.frames)].clone())
            });
            if let Some(f) = frame {
                per_thread[ti] += w;
                by_frame
                    .entry(f.display())
                    .or_insert_with(|| (f.clone(), 0))
                    .1 += w;
            }
        }
    }
    let top = by_frame
        .into_values()
        .max_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| b.0.display().cmp(&a.0.display()))
        })
        .map(|x| x.0);
    (per_thread, top)
}

pub fn thread_churn(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let s = &a.summary;
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let wall = r.wall_ns.max(s.wall_ns).max(1);
    let others = s.threads.iter().filter(|t| !t.main);
    let created: u64 = others.clone().map(|t| t.folded.unwrap_or(1) as u64).sum();
    let lives: u64 = others.map(|t| t.wall_ns).sum();
    let rate = created as f64 / (wall as f64 / 1e9);
    let mean_life = lives as f64 / created.max(1) as f64;
    // Many threads for the machine and the run: counts and rates per CPU (a pool keeps about
    // one thread per CPU for the whole run), lives short beside the run's.
    let cpus = f64::from(r.cpus.max(1));
    if (created as f64) < rule.param("min_threads_per_cpu") * cpus
        || rate < rule.param("min_threads_per_s_per_cpu") * cpus
        || mean_life > rule.param("max_mean_life_ns")
        || mean_life > rule.param("max_mean_life_of_wall") * wall as f64
    {
        return vec![];
    }
    // The creating threads' CPU time inside a thread-creation function.
    let (per_thread, frame) =
        cpu_in_functions(r, |_| true, &rule.param_strings("create_functions"));
    let creation: u64 = per_thread.iter().sum();
    let creators = per_thread.iter().filter(|&&ns| ns > 0).count() as u64;
    let width = creators.clamp(1, r.cpus.max(1) as u64);
    // The short threads' lives beyond their CPU time and their lock waits: waiting to start and
    // to be joined, which a pool's threads, already running, skip (a library that makes a pool
    // of two threads per call spent three quarters of each thread's life so).
    let max_life = rule.param("max_mean_life_ns") as u64;
    let lifecycle: u64 = s
        .threads
        .iter()
        .filter(|t| !t.main && (t.folded.is_some() || t.wall_ns <= max_life))
        .map(|t| t.wall_ns.saturating_sub(t.cpu_ns + t.lock_wait_ns))
        .sum();
    // Creating the threads is work a pool does once: the creators' time in it, with the threads'
    // start and end shared over the CPUs, is what a pool saves.
    let stake = (creation / width + lifecycle / r.cpus.max(1) as u64).min(wall);
    let Some(severity) = rule.severity_of(ratio(stake, wall)) else {
        return vec![];
    };
    let frame = frame_words(frame.as_ref());
    let evidence = vec![
        format!(
            "{} threads created in {} ({} a second), each living {} on average ({} in all)",
            fmt_count(created),
            fmt_ns(wall as f64),
            fmt_count(rate as u64),
            fmt_ns(mean_life),
            fmt_ns(lives as f64)
        ),
        format!(
            "creating them took {} of CPU time in pthread_create ({} per thread, {} of the wall time), from {}",
            fmt_ns(creation as f64),
            fmt_ns(creation as f64 / created.max(1) as f64),
            fmt_pct(ratio(creation, wall)),
            frame
        ),
        format!(
            "they spent {} of their lives neither on a CPU nor waiting for a lock ({} per thread): starting, and waiting to end and be joined",
            fmt_ns(lifecycle as f64),
            fmt_ns(lifecycle as f64 / created.max(1) as f64)
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("count", fmt_count(created)),
            ("rate", fmt_count(rate as u64)),
            ("life", fmt_ns(mean_life)),
            ("user_frame", frame),
            ("speedup", speedup_words(wall, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

// ---- a mostly serial program ----

pub fn mostly_serial(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let (Some(r), Some(c)) = (a.states.as_ref(), a.concurrency.as_ref()) else {
        return vec![];
    };
    // The serial work: the CPU time of the thread that ran each stretch, in it (a stretch with
    // one thread wanting a CPU now and then, while the others wait for I/O, is no serial work).
    let lone: u64 = c
        .lone
        .iter()
        .filter_map(|s| {
            let (all, own) = r.cpu_in(s.thread?, s.begin_ns, s.end_ns);
            Some(all.saturating_sub(own))
        })
        .sum();
    if c.cpus < 2 || lone < rule.param("min_serial_ns") as u64 {
        return vec![];
    }
    let longest = c
        .lone
        .iter()
        .max_by_key(|s| s.end_ns - s.begin_ns)
        .expect("lone > 0");
    // The threads the user asked for: threads other than the one that ran alone that computed
    // at least a little (a pool that never got work, or one helper, is no sign of intent).
    let min_cpu = rule.param("min_worker_cpu_ns") as u64;
    let workers: Vec<&ThreadStates> = r
        .threads
        .iter()
        .enumerate()
        .filter(|&(i, t)| Some(i) != longest.thread && t.folded.is_none() && cpu_of(t) >= min_cpu)
        .map(|x| x.1)
        .collect();
    let worker_cpu: u64 = workers.iter().map(|t| cpu_of(t)).sum();
    // Alone means alone: other threads computing inside the stretches (a pipeline whose
    // consumers take turns with a busy producer, each below the concurrency's bar) make it
    // concurrent work, not a serial program.
    let others_in_lone: u64 = c
        .lone
        .iter()
        .flat_map(|s| {
            (0..r.threads.len())
                .filter(move |&i| Some(i) != s.thread)
                .map(move |i| r.cpu_in(i, s.begin_ns, s.end_ns).0)
        })
        .sum();
    if others_in_lone as f64 > rule.param("max_others_cpu_in_lone") * lone as f64 {
        return vec![];
    }
    // Few or short: the others' work is small beside the lone thread's (threads that ran as
    // much, one after the other, take turns: another finding).
    if (workers.len() as f64) < rule.param("min_workers")
        || worker_cpu as f64 > rule.param("max_worker_cpu_of_serial") * lone as f64
    {
        return vec![];
    }
    let width = (workers.len() as u64).min(c.cpus as u64).max(2) as f64;
    let stake = (lone as f64 * (1.0 - 1.0 / width)) as u64;
    let wall = r.wall_ns.max(1);
    let Some(severity) = rule.severity_of(ratio(stake, wall)) else {
        return vec![];
    };
    let thread = longest
        .thread
        .and_then(|i| r.threads.get(i))
        .map_or_else(|| "one thread".to_string(), thread_words);
    let frame = frame_words(longest.user_frame.as_ref());
    let evidence = vec![
        format!(
            "one thread ran alone for {} ({} of the wall time, in {} stretch(es)); the longest stretch: {} to {}, {} running {}",
            fmt_ns(lone as f64),
            fmt_pct(ratio(lone, wall)),
            c.lone.len(),
            fmt_ns(longest.begin_ns as f64),
            fmt_ns(longest.end_ns as f64),
            thread,
            frame
        ),
        format!(
            "{} other threads ran {} of CPU time in all ({} of the wall time); at least 2 threads wanted a CPU for {} ({} CPUs)",
            workers.len(),
            fmt_ns(worker_cpu as f64),
            fmt_pct(ratio(worker_cpu, wall)),
            fmt_ns(c.parallel_ns as f64),
            c.cpus
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(ratio(lone, wall))),
            ("thread", thread),
            ("user_frame", frame),
            ("workers", workers.len().to_string()),
            ("speedup", speedup_words(wall, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

// ---- read-side rwlock contention ----

pub fn rwlock_readers(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let functions = rule.param_strings("read_functions");
    let in_read_side = |s: &StateSite| {
        matches!(s.category, Category::Lock | Category::Atomic)
            && functions.iter().any(|f| *f == s.function())
    };
    let mut ns = 0u64;
    let mut samples = 0u64;
    let mut threads = 0usize;
    let mut seen = 0u64;
    let mut best: Option<&StateSite> = None;
    for t in &r.threads {
        let mine: Vec<&StateSite> = t.sites.iter().filter(|s| in_read_side(s)).collect();
        if mine.is_empty() {
            continue;
        }
        threads += 1;
        seen += t.sampled_ns();
        for s in mine {
            ns += s.ns;
            samples += s.samples;
            if best.is_none_or(|b| s.ns > b.ns) {
                best = Some(s);
            }
        }
    }
    if r.cpus < 2
        || (threads as f64) < rule.param("min_threads")
        || (samples as f64) < rule.param("min_samples")
    {
        return vec![];
    }
    // The read locks' own figures: hardly any wait, so the time is not waiting for a writer.
    let reads: Vec<_> = a
        .summary
        .locks
        .iter()
        .filter(|l| l.kind == "rwlock-read")
        .collect();
    let Some(top) = reads.iter().max_by_key(|l| l.acquisitions) else {
        return vec![];
    };
    let wait: u64 = reads.iter().map(|l| l.wait_ns).sum();
    let acquisitions: u64 = reads.iter().map(|l| l.acquisitions).sum();
    let contended: u64 = reads.iter().map(|l| l.contended).sum();
    if wait as f64 > rule.param("max_wait_share") * ns as f64 {
        return vec![];
    }
    let share = ratio(ns, seen);
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let frame = frame_words(best.and_then(|b| b.user_frame()));
    let lock = a.object_name(top.address);
    let width = (threads as u64).min(r.cpus as u64).max(1);
    let stake = (ns / width).min(r.wall_ns);
    let evidence = vec![
        format!(
            "{} threads spent {} ({} of their sampled time) inside the read side of rwlocks, mostly in {} from {}",
            threads,
            fmt_ns(ns as f64),
            fmt_pct(share),
            best.map_or_else(|| "?".to_string(), StateSite::function),
            frame
        ),
        format!(
            "{} read acquisitions of {} ({} in all), {} contended, {} of waiting: the time is not spent waiting for a writer",
            fmt_count(top.acquisitions),
            lock,
            fmt_count(acquisitions),
            fmt_count(contended),
            fmt_ns(wait as f64)
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("lock", lock),
            ("user_frame", frame),
            ("speedup", speedup_words(r.wall_ns, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

// ---- wake-up storms ----

/// What the waits on one condition variable say about its broadcasts.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Storm {
    pub object: u64,
    /// Waits ended by a broadcast, the broadcasts that ended them (those their waiters saw: a
    /// lower bound), and the wake-ups after which the thread waited on the object again without
    /// releasing the mutex (it found no work).
    pub woken: u64,
    pub broadcasts: u64,
    pub futile: u64,
    /// Threads woken by the broadcasts, and the tids of the threads that broadcast.
    pub waiters: Vec<u32>,
    pub wakers: Vec<u32>,
}

impl Storm {
    pub fn futile_share(&self) -> f64 {
        ratio(self.futile, self.woken)
    }

    /// Wake-ups per wake-up that found work.
    pub fn per_useful(&self) -> f64 {
        self.woken as f64 / self.woken.saturating_sub(self.futile).max(1) as f64
    }
}

/// The condition variables woken by broadcasts, from the recorded waits, most woken first.
pub(super) fn storms(a: &Analysis) -> Vec<Storm> {
    use crate::profile::samples::WaitKind;
    use std::collections::{BTreeMap, HashSet};
    let p = &a.profile;
    let tid_of: HashMap<u32, u32> = a
        .states
        .iter()
        .flat_map(|r| r.threads.iter())
        .map(|t| (t.serial, t.tid))
        .collect();
    // Per (object, waiting thread): its condition waits in time order.
    let mut by_waiter: BTreeMap<(u64, u32), Vec<&crate::profile::samples::Wait>> = BTreeMap::new();
    for w in p
        .waits
        .iter()
        .filter(|w| w.kind == WaitKind::Condition && w.object != 0)
    {
        by_waiter.entry((w.object, w.serial)).or_default().push(w);
    }
    let mut out: BTreeMap<u64, (Storm, HashSet<(u16, u32)>)> = BTreeMap::new();
    for ((object, serial), mut waits) in by_waiter {
        waits.sort_by_key(|w| w.start_mono_ns);
        for (i, w) in waits.iter().enumerate() {
            let Some(n) = w.notification.filter(|n| n.broadcast) else {
                continue;
            };
            let (s, seen) = out.entry(object).or_insert_with(|| {
                (
                    Storm {
                        object,
                        ..Storm::default()
                    },
                    HashSet::new(),
                )
            });
            s.woken += 1;
            let waker = w.other_tid.unwrap_or(0);
            if seen.insert((n.seq, waker)) {
                s.broadcasts += 1;
            }
            if !s.wakers.contains(&waker) && waker != 0 {
                s.wakers.push(waker);
            }
            let tid = tid_of.get(&serial).copied().unwrap_or(0);
            if !s.waiters.contains(&tid) {
                s.waiters.push(tid);
            }
            if waits.get(i + 1).is_some_and(|next| next.rewait) {
                s.futile += 1;
            }
        }
    }
    let mut v: Vec<Storm> = out.into_values().map(|x| x.0).collect();
    v.sort_by(|a, b| b.woken.cmp(&a.woken).then(a.object.cmp(&b.object)));
    v
}

/// CPU time (by CPU samples) of the threads with tids in `tids` inside any of `functions`, and
/// the user frame with the most of it.
fn cpu_inside(r: &StateReport, tids: &[u32], functions: &[String]) -> (u64, Option<Frame>) {
    let (per_thread, top) = cpu_in_functions(r, |t| tids.contains(&t.tid), functions);
    (per_thread.iter().sum(), top)
}

pub fn wakeup_storm(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let Some(s) = storms(a).into_iter().find(|s| {
        s.woken as f64 >= rule.param("min_wakeups")
            && s.woken as f64 >= rule.param("min_woken_per_broadcast") * s.broadcasts as f64
            && s.per_useful() >= rule.param("min_per_useful")
    }) else {
        return vec![];
    };
    let f = s.futile_share();
    let (notify_cpu, waker_frame) =
        cpu_inside(r, &s.wakers, &rule.param_strings("notify_functions"));
    let (wait_cpu, waiter_frame) = cpu_inside(r, &s.waiters, &rule.param_strings("wait_functions"));
    // What the futile wake-ups cost the threads that broadcast: their time inside the broadcast
    // (the kernel wakes every waiter) and waiting for the mutex the woken threads take one after
    // the other. The woken threads' own time (in the evidence) is taken from the CPUs, not
    // counted: the broadcasting thread is what the others wait for.
    let wakers: Vec<&ThreadStates> = r
        .threads
        .iter()
        .filter(|t| s.wakers.contains(&t.tid))
        .collect();
    let waker_lock: u64 = wakers.iter().map(|t| t.ns[Category::Lock.index()]).sum();
    let waker_life: u64 = wakers.iter().map(|t| t.life_ns).sum();
    let wall = r.wall_ns.max(1);
    let stake = ((f * (notify_cpu + waker_lock) as f64) as u64)
        .min(waker_life)
        .min(wall);
    let Some(severity) = rule.severity_of(ratio(stake, wall)) else {
        return vec![];
    };
    let object = a.object_name(s.object);
    let waker = frame_words(waker_frame.as_ref());
    let waiter = frame_words(waiter_frame.as_ref());
    let per_broadcast = s.woken as f64 / s.broadcasts.max(1) as f64;
    let evidence = vec![
        format!(
            "broadcasts woke {} waits of {} threads (at least {} broadcasts, up to {:.1} threads each); {} of the wake-ups ({}) found no work: the thread waited again without releasing the mutex; {:.1} wake-ups per useful one",
            fmt_count(s.woken),
            s.waiters.len(),
            fmt_count(s.broadcasts),
            per_broadcast,
            fmt_count(s.futile),
            fmt_pct(f),
            s.per_useful()
        ),
        format!(
            "broadcast from {waker}: {} of CPU time inside pthread_cond_broadcast and {} waiting for locks; the woken threads, waiting in {waiter}: {} of CPU time inside the wait",
            fmt_ns(notify_cpu as f64),
            fmt_ns(waker_lock as f64),
            fmt_ns(wait_cpu as f64)
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("object", object),
            ("per_useful", format!("{:.1}", s.per_useful())),
            ("threads", s.waiters.len().to_string()),
            ("waker", waker),
            ("waiter", waiter),
            ("speedup", speedup_words(wall, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

// ---- threads taking turns ----

/// Threads that take turns on one object, as the `taking-turns` rule finds them.
pub(super) struct TurnTaking {
    turns: Turns,
    /// The members that work (index into `StateReport::threads`).
    pub working: Vec<usize>,
    span: u64,
    /// On a CPU or runnable, summed over the working members.
    wanted: u64,
    /// `wanted`, less the run-queue waits that other processes caused where those made it pass
    /// the rule's `max_concurrency`.
    own_wanted: u64,
}

/// The first group of threads taking turns that `rule` reports (None: none).
pub(super) fn taking_turns_group(rule: &Rule, a: &Analysis) -> Option<TurnTaking> {
    let r = a.states.as_ref()?;
    if r.cpus < 2 {
        return None;
    }
    // The share of the program's run-queue waits that other processes caused (they came while
    // the program wanted no more CPUs than there are).
    let others_share = a.concurrency.as_ref().map_or(0.0, |c| {
        ratio(c.other_runnable_ns, c.own_runnable_ns + c.other_runnable_ns)
    });
    for t in a.waitfor.as_ref().map(WaitFor::turns).unwrap_or_default() {
        if (t.waits as f64) < rule.param("min_waits") {
            continue;
        }
        let Some(all) = t
            .members
            .iter()
            .map(|&i| Some((a.states_index_at(i)?, a.states_at(i)?)))
            .collect::<Option<Vec<(usize, &ThreadStates)>>>()
        else {
            continue;
        };
        if all.iter().any(|(_, m)| m.kernel.is_none()) {
            continue;
        }
        // Their time together: the longest life among them (they wait for one another, so they
        // live at the same time).
        let span = all.iter().map(|(_, m)| m.life_ns).max().unwrap_or(0);
        if span < rule.param("min_span_ns") as u64 {
            continue;
        }
        // The ones that work (run a fair share of the span; a main thread that only started
        // them and waits is no member) ...
        let exec = |m: &ThreadStates| m.kernel.map_or(0, |k| k.exec_ns);
        let (working, members): (Vec<usize>, Vec<&ThreadStates>) = all
            .into_iter()
            .filter(|(_, m)| exec(m) as f64 >= rule.param("min_member_cpu_share") * span as f64)
            .unzip();
        if members.len() < 2 {
            continue;
        }
        // ... yet together want about one CPU: on a CPU or waiting for one, never blocked all at
        // once and never running all at once. Waits for a CPU that other processes held are no
        // wish of theirs: CPython's GIL waiters wake every 5 ms to look at it, and behind other
        // load each such look waited milliseconds for a CPU, so four threads taking turns read
        // as 1.31-1.34 CPUs wanted (and their turns as serial sections). Those waits are left out
        // only while the threads still wanted well under a CPU each, which threads running side
        // by side, however starved, do not.
        let ran: u64 = members.iter().map(|m| exec(m)).sum();
        let delay: u64 = members
            .iter()
            .filter_map(|m| m.kernel)
            .map(|k| k.run_delay_ns)
            .sum();
        let wanted = ran + delay;
        let own_wanted = ran + (delay as f64 * (1.0 - others_share)) as u64;
        let side_by_side = members.len().min(r.cpus as usize) as f64;
        let max = rule.param("max_concurrency");
        let own_wanted = if ratio(wanted, span) <= max {
            wanted
        } else if ratio(own_wanted, span) <= max
            && ratio(wanted, span) <= side_by_side - rule.param("side_by_side_margin")
        {
            own_wanted
        } else {
            continue;
        };
        return Some(TurnTaking {
            turns: t,
            working,
            span,
            wanted,
            own_wanted,
        });
    }
    None
}

/// The object threads take turns on where the `taking-turns` finding is made, with the threads
/// that take turns (their indexes in `Profile::threads` and in `StateReport::threads`).
pub(super) struct TurnsCause {
    object: u64,
    name: String,
    members: Vec<usize>,
    working: Vec<usize>,
}

impl TurnsCause {
    /// Whether a lock is part of the same cause: the runtime names it as the same object
    /// (CPython's GIL is a condition variable the threads pass and the mutex beside it), or it
    /// lies in the same structure (within 128 bytes: the mutex that guards the condition
    /// variable, named where it was initialised when the runtime has no name for it) and only
    /// the threads taking turns waited for it (`waiters`, indexes in `Profile::threads`; or
    /// `states_waiters`, in `StateReport::threads`). A lock of their own that they also meet on
    /// elsewhere is its own cause.
    pub(super) fn covers(
        &self,
        a: &Analysis,
        lock: u64,
        waiters: &[usize],
        by_states: bool,
    ) -> bool {
        let name = a.object_name(lock);
        let same_words = crate::analysis::runtime_locks::table()
            .iter()
            .any(|l| self.name.starts_with(&l.words) && name.starts_with(&l.words));
        let members = if by_states {
            &self.working
        } else {
            &self.members
        };
        let beside = lock.abs_diff(self.object) < 128
            && !waiters.is_empty()
            && waiters.iter().all(|w| members.contains(w));
        lock == self.object || same_words || beside
    }
}

/// The taking-turns cause, where the rule makes a finding of it: one cause, one finding, so the
/// lock rules leave its objects alone (two Python threads calling C through ctypes had HIGH
/// taking-turns, MEDIUM lock-contention on "pthread mutex CPython's GIL" and MEDIUM "Contention
/// on the lock initialised in Py_InitializeFromConfig inside the C library").
pub(super) fn turns_cause(a: &Analysis) -> Option<TurnsCause> {
    let rule = super::rules::rules()
        .iter()
        .find(|r| r.detector == "taking_turns")?;
    if taking_turns(rule, a).is_empty() {
        return None;
    }
    let g = taking_turns_group(rule, a)?;
    Some(TurnsCause {
        object: g.turns.object,
        name: a.object_name(g.turns.object),
        members: g.turns.members.clone(),
        working: g.working.clone(),
    })
}

/// How many of the functions the threads taking turns ran the evidence names.
const TURNS_FRAMES: usize = 3;

/// User frames with their time, most first, joined by function (its lines summed): each
/// function once, at its heaviest line.
fn by_function(frames: Vec<(Frame, u64)>) -> Vec<(Frame, u64)> {
    let mut out: Vec<(Frame, u64)> = Vec::new();
    for (f, ns) in frames {
        let same = |g: &Frame| g.function == f.function && g.file == f.file && g.module == f.module;
        match out
            .iter_mut()
            .find(|(g, _)| f.function.is_some() && same(g))
        {
            Some(e) => e.1 += ns,
            None => out.push((f, ns)),
        }
    }
    out.sort_by_key(|b| std::cmp::Reverse(b.1));
    out
}

pub fn taking_turns(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let (Some(r), Some(g)) = (a.states.as_ref(), taking_turns_group(rule, a)) else {
        return vec![];
    };
    let TurnTaking {
        turns: t,
        working,
        span,
        wanted,
        own_wanted,
    } = g;
    let members: Vec<&ThreadStates> = working.iter().filter_map(|&i| r.threads.get(i)).collect();
    let n = members.len() as u64;
    let width = n.min(r.cpus as u64) as f64;
    // Running side by side, their wanted time would spread over min(N, CPUs); the waits for
    // CPUs that other processes held stay in it, as such load would not leave them.
    let stake = ((span as f64 - wanted as f64 / width).max(0.0) as u64).min(r.wall_ns);
    let Some(severity) = rule.severity_of(ratio(stake, r.wall_ns.max(1))) else {
        return vec![];
    };
    let concurrency = ratio(own_wanted, span);
    let object = a.object_name(t.object);
    let runtime = crate::analysis::runtime_locks::table()
        .iter()
        .find(|l| object.starts_with(&l.words));
    // A runtime's own remedy replaces the one for an object of the program's: the GIL is no
    // object to hold less or give each thread a copy of.
    let runtime_remedy = runtime
        .and_then(|l| {
            rule.params
                .get("runtime_remedies")?
                .get(&l.runtime)?
                .as_str()
        })
        .or_else(|| rule.params.get("object_remedy")?.as_str())
        .unwrap_or("")
        .to_string();
    // The code the threads ran while taking turns: the user frames of their CPU time, most
    // first (each thread may run its own function: two threads, two functions).
    let (top, cpu) = r.top_user_frames(&working, 0, u64::MAX);
    let top = by_function(top);
    let frame = frame_words(top.first().map(|x| &x.0));
    let frames = if top.is_empty() {
        format!("mostly in {frame}")
    } else {
        let list: Vec<String> = top
            .iter()
            .take(TURNS_FRAMES)
            .map(|(f, ns)| format!("{} {}", frame_words(Some(f)), fmt_pct(ratio(*ns, cpu))))
            .collect();
        format!("their CPU time in {}", list.join(", "))
    };
    // A runtime's lock reads by the runtime's words in the title and cause; the evidence keeps
    // where it lies (`CPython's GIL (global interpreter lock) in _PyRuntime+392`).
    let object_words = runtime.map_or_else(|| object.clone(), |l| l.words.clone());
    let names: Vec<String> = members.iter().take(4).map(|m| thread_words(m)).collect();
    let others = if own_wanted < wanted {
        format!(
            "; {:.2} with the waits for CPUs that other processes held",
            ratio(wanted, span)
        )
    } else {
        String::new()
    };
    let evidence = vec![
        format!(
            "{} threads ({}{}) waited for one another on {} {} times ({} in all), each woken by another of them",
            n,
            names.join(", "),
            if members.len() > 4 { ", ..." } else { "" },
            object,
            fmt_count(t.waits),
            fmt_ns(t.wait_ns as f64)
        ),
        format!(
            "together they wanted {:.2} CPUs (on a CPU or runnable: {} over {}{}) on {} CPUs, each running at least {} of the time; {}",
            concurrency,
            fmt_ns(own_wanted as f64),
            fmt_ns(span as f64),
            others,
            r.cpus,
            fmt_pct(rule.param("min_member_cpu_share")),
            frames
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("count", n.to_string()),
            ("object", object_words),
            ("concurrency", format!("{concurrency:.2}")),
            ("user_frame", frame),
            ("turns_remedy", runtime_remedy),
            ("speedup", speedup_words(r.wall_ns, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

/// Words for the read side of rwlocks in the parallel-efficiency finding's parts.
pub(super) const READER_COUNT_WORDS: &str =
    "the read side of rwlocks (their shared reader count bouncing between CPUs, not lock waits)";

/// The threads' sampled lock-state time in the read side of rwlocks whose read locks hardly
/// waited (the `rwlock-reader-count` rule's functions and wait gate), or 0: the part of "lock
/// waits" that is no wait.
pub(super) fn reader_count_lock_ns(a: &Analysis) -> u64 {
    let (Some(r), Some(rule)) = (
        a.states.as_ref(),
        super::rules::rules()
            .iter()
            .find(|r| r.detector == "rwlock_readers"),
    ) else {
        return 0;
    };
    let functions = rule.param_strings("read_functions");
    let ns: u64 = r
        .threads
        .iter()
        .flat_map(|t| t.sites.iter())
        .filter(|s| s.category == Category::Lock && functions.iter().any(|f| *f == s.function()))
        .map(|s| s.ns)
        .sum();
    let wait: u64 = a
        .summary
        .locks
        .iter()
        .filter(|l| l.kind == "rwlock-read")
        .map(|l| l.wait_ns)
        .sum();
    if wait as f64 > rule.param("max_wait_share") * ns as f64 {
        return 0;
    }
    ns
}
