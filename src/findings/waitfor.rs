//! Detectors over the wait-for edges (docs/WAITFOR.md): a lock held while its holder is away from
//! its work, in I/O or asleep.

use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::states::Category;
use crate::analysis::waitfor::HolderTime;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};

/// Where a lock's holders were while others waited for it.
#[derive(Clone, Copy, PartialEq)]
enum Away {
    /// In I/O calls (the disk, the network, a pipe), on a CPU or off it.
    Io,
    /// Asleep outside I/O: a sleep, a condition variable, a join, a wait for events.
    Asleep,
}

/// A lock whose holders were in I/O (their own samples inside the waits of others) for at least
/// `min_away_share` of the time others waited for it, with I/O the larger part of it.
pub fn lock_across_io(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    lock_held_away(rule, a, Away::Io)
}

/// A lock whose holders slept (not in I/O) for at least `min_away_share` of the time others
/// waited for it, with sleep the larger part: a lock held across a blocking call, or used to park
/// threads.
pub fn lock_while_asleep(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    lock_held_away(rule, a, Away::Asleep)
}

/// Whether the holders of a lock were away from their work (in I/O or asleep) for at least
/// `share` of their sampled time in the waits, waits lasting `min_mean_wait_ns` on average: such a
/// lock is reported by the two rules above (whichever part is larger), not as the contention of a
/// holder at work. A wait ends some time after the release (the waiter's wake-up: 30-50 µs on a
/// virtual machine), while the thread that released the lock goes on: one that sleeps or writes
/// right after a short hold is seen away in the waits' tails, although it never held the lock
/// there (tests/findings_programs/sleepy_workers.c: 36-39% asleep in waits of 48 µs). Waits
/// several times longer than a wake-up are not made of tails.
pub fn holders_away(h: &HolderTime, share: f64, min_mean_wait_ns: f64) -> bool {
    h.sampled_ns > 0
        && h.waits > 0
        && h.wait_ns as f64 / h.waits as f64 >= min_mean_wait_ns
        && h.share(h.io_ns.saturating_add(h.asleep_ns)) >= share
}

/// How the recorded waits for one lock overlapped what their holder did, from the waits and the
/// holder's own samples (not its samples inside the waits, which `HolderTime` sums).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct HolderOverlap {
    /// The waits whose holder is known, up to the holder's wake where it is known.
    wait_ns: u64,
    /// Of it, while the holder waited on a condition variable (which releases its mutex).
    in_condition_ns: u64,
    /// Of it, while the holder waited for an event from outside (poll, epoll, accept, a socket's
    /// read: not a timed sleep) and the process's threads hardly ran (`parked_max_running`
    /// threads on a CPU on average): the program waiting for input, nobody wanting to run.
    parked_ns: u64,
}

/// A system call in which a thread waits for an event from outside the process: the input waits
/// of the thread states (docs/STATES.md) but timed sleeps, which are a delay the thread chose.
fn waits_for_event(syscall: &str) -> bool {
    crate::analysis::states::waits_for_input(syscall)
        && !matches!(syscall, "nanosleep" | "clock_nanosleep")
}

/// Overlap of [b, e) with sorted, disjoint-ish stretches.
fn overlap(stretches: &[(u64, u64)], b: u64, e: u64) -> u64 {
    let from = stretches.partition_point(|s| s.1 <= b);
    stretches[from..]
        .iter()
        .take_while(|s| s.0 < e)
        .map(|s| s.1.min(e).saturating_sub(s.0.max(b)))
        .sum::<u64>()
        .min(e - b)
}

/// What each thread waited in, from the recorded waits and its own samples: its condition
/// variable waits and its waits for events, each sorted, by thread serial.
struct HolderStretches {
    serial_of: std::collections::HashMap<u32, u32>,
    conditions: std::collections::HashMap<u32, Vec<(u64, u64)>>,
    events: std::collections::HashMap<u32, Vec<(u64, u64)>>,
}

impl HolderStretches {
    fn of(a: &Analysis) -> HolderStretches {
        use crate::profile::samples::{SampleKind, WaitKind};
        let p = &a.profile;
        let mut h = HolderStretches {
            serial_of: p.threads.iter().map(|t| (t.tid, t.serial)).collect(),
            conditions: Default::default(),
            events: Default::default(),
        };
        for w in p.waits.iter().filter(|w| w.kind == WaitKind::Condition) {
            h.conditions
                .entry(w.serial)
                .or_default()
                .push((w.start_mono_ns, w.end_mono_ns));
        }
        for s in p.samples.iter().filter(|s| s.kind == SampleKind::Wall) {
            let Some(nr) = s.syscall else { continue };
            if waits_for_event(&crate::analysis::states::syscall_name(nr, s.arg)) {
                h.events
                    .entry(s.serial)
                    .or_default()
                    .push((s.mono_ns.saturating_sub(s.weight_ns), s.mono_ns));
            }
        }
        for v in h.conditions.values_mut().chain(h.events.values_mut()) {
            v.sort_unstable();
        }
        h
    }

    /// How the recorded waits for `lock` overlapped what their holder did.
    fn overlap(&self, a: &Analysis, lock: u64, parked_max_running: f64) -> HolderOverlap {
        use crate::profile::samples::WaitKind;
        let p = &a.profile;
        let start = p.process.start_mono_ns;
        let none = Vec::new();
        let mut out = HolderOverlap::default();
        for w in p
            .waits
            .iter()
            .filter(|w| w.object == lock && matches!(w.kind, WaitKind::Lock | WaitKind::Futex))
        {
            // Up to the holder's wake: after it the waiter wakes up, the lock already released.
            let (b, e) = (w.start_mono_ns, w.woken_at_ns());
            let Some(holder) = w.other_tid.and_then(|t| self.serial_of.get(&t)) else {
                continue;
            };
            if e <= b {
                continue;
            }
            out.wait_ns += e - b;
            out.in_condition_ns += overlap(self.conditions.get(holder).unwrap_or(&none), b, e);
            let event = overlap(self.events.get(holder).unwrap_or(&none), b, e);
            if event > 0 {
                // The process's threads on a CPU meanwhile, by the kernel's figures (else by
                // their CPU samples).
                let (rb, re) = (b.saturating_sub(start), e.saturating_sub(start));
                let ran = match &a.concurrency {
                    Some(c) => c.running_ns(rb, re),
                    None => a.states.as_ref().map_or(0, |r| {
                        (0..r.threads.len()).map(|ti| r.cpu_in(ti, rb, re).0).sum()
                    }),
                };
                if (ran as f64) < parked_max_running * (e - b) as f64 {
                    out.parked_ns += event;
                }
            }
        }
        out
    }
}

/// The locks that parked threads with nothing to do (lock-held-while-asleep's parameters):
/// waiting for such a lock is waiting for work. Either their waits' holders mostly waited for an
/// event from outside while the process's threads hardly ran (`parked_max_running`,
/// `min_away_share`), or the lock is a gate (`is_gate`).
pub(super) fn parked_locks(a: &Analysis) -> Vec<u64> {
    let Some(rule) = super::rules::rules()
        .iter()
        .find(|r| r.detector == "lock_while_asleep")
    else {
        return Vec::new();
    };
    if a.profile.waits.is_empty() {
        return Vec::new();
    }
    let stretches = HolderStretches::of(a);
    let mut locks: Vec<u64> = a.summary.locks.iter().map(|l| l.address).collect();
    locks.sort_unstable();
    locks.dedup();
    locks.retain(|&l| {
        let gate = a
            .waitfor
            .as_ref()
            .and_then(|w| w.holder_time(l))
            .is_some_and(|h| {
                is_gate(
                    h,
                    waiters_mean_hold_ns(a, l, &h.waiters),
                    rule.param("gate_min_event_share"),
                    rule.param("gate_max_waiter_hold_ns"),
                )
            });
        let o = stretches.overlap(a, l, rule.param("parked_max_running"));
        gate || (o.wait_ns > 0
            && o.parked_ns as f64 >= rule.param("min_away_share") * o.wait_ns as f64)
    });
    locks
}

/// Whether a lock is a gate that keeps threads with nothing to do asleep (a pause switch), not a
/// critical section: the threads that wait for it never hold it while another waits (one side
/// holds, the other only passes through), what their holds were timed says they release it at
/// once (`waiters_hold_ns`, their mean timed hold, under `max_waiter_hold_ns`; none timed says
/// nothing against it), and the holders spent at least `min_event_share` of their sampled time
/// inside the waits waiting for an event from outside (`epoll_wait`, `poll`, `accept`): a hold
/// that spans its holder's own waits for input spans its loop, so the holder's I/O in it is the
/// serving it does anyway, and the waiters wait for the holder to hand them work. redis-server
/// with `--io-threads` holds each idle I/O thread's mutex from its main thread, which serves the
/// clients itself meanwhile; the I/O thread takes the mutex and releases it at once. A lock held
/// across `fdatasync` by threads that all need it (tests/cause_programs/log_fsync.cpp) fails the
/// first and the last test.
fn is_gate(
    h: &HolderTime,
    waiters_hold_ns: Option<f64>,
    min_event_share: f64,
    max_waiter_hold_ns: f64,
) -> bool {
    h.sampled_ns > 0
        && !h.waiters.iter().any(|w| h.holders.contains(w))
        && waiters_hold_ns.is_none_or(|ns| ns <= max_waiter_hold_ns)
        && h.share_where(|x| HolderTime::is_asleep(x.state()) && waits_for_event(&x.function))
            >= min_event_share
}

/// The waiting threads' mean timed hold of the lock at `object` (None: none of their holds was
/// timed).
fn waiters_mean_hold_ns(a: &Analysis, object: u64, waiters: &[usize]) -> Option<f64> {
    let (mut holds, mut ticks) = (0u64, 0u64);
    for t in waiters.iter().filter_map(|&i| a.profile.threads.get(i)) {
        for l in t.locks.iter().filter(|l| l.address == object) {
            holds = holds.saturating_add(l.timed_holds);
            ticks = ticks.saturating_add(l.hold_ticks);
        }
    }
    (holds > 0).then(|| a.profile.ticks_to_ns(ticks) as f64 / holds as f64)
}

/// The measure is the waiting threads' share of their lives spent waiting for the lock; the stake
/// is the waiting that overlapped the holders' I/O or sleep (each edge's waits times the holder's
/// share in them): what taking it out of the critical section could remove.
fn lock_held_away(rule: &Rule, a: &Analysis, away: Away) -> Vec<Finding> {
    let Some(w) = &a.waitfor else {
        return Vec::new();
    };
    // The locks the report lists (pthread locks, runtimes' locks): a futex word that is no lock
    // (a condition variable's) has a waker, not a holder.
    let mut objects: Vec<u64> = a.summary.locks.iter().map(|l| l.address).collect();
    objects.sort_unstable();
    objects.dedup();
    let mut found: Vec<(f64, Finding)> = Vec::new();
    let turns = super::causes::turns_cause(a);
    let mut stretches: Option<HolderStretches> = None;
    let mut parked: Option<Vec<u64>> = None;
    for object in objects {
        let Some(h) = w.holder_time(object) else {
            continue;
        };
        // The object threads take turns on, or its mutex: the taking-turns finding's (CPython's
        // GIL's mutex had read as held while its holder waited on the GIL's condition).
        if turns
            .as_ref()
            .is_some_and(|t| t.covers(a, object, &h.waiters, false))
        {
            continue;
        }
        let (part_ns, stake_ns) = match away {
            Away::Io => (h.io_ns, h.io_stake_ns),
            Away::Asleep => (h.asleep_ns, h.asleep_stake_ns),
        };
        // Several threads' waits overlap one sleep: what it could save is at most the run.
        let stake_ns = match a.summary.wall_ns {
            0 => stake_ns,
            wall => stake_ns.min(wall as f64),
        };
        // The larger of the two parts names the finding (I/O on a tie), so a lock gets one.
        let larger = match away {
            Away::Io => h.io_ns >= h.asleep_ns,
            Away::Asleep => h.asleep_ns > h.io_ns,
        };
        if (h.wait_ns as f64) < rule.param("min_wait_ns")
            || !larger
            || !holders_away(
                h,
                rule.param("min_away_share"),
                rule.param("min_mean_wait_ns"),
            )
        {
            continue;
        }
        // A lock that parks threads with nothing to do is no critical section: its waiters wait
        // for work (`parked_locks`), whether its holder was then asleep or serving.
        let parked = parked.get_or_insert_with(|| parked_locks(a));
        if parked.contains(&object) {
            continue;
        }
        if away == Away::Asleep {
            // A holder asleep on a condition variable released its mutex to wait (the samples
            // in the waits' tails after its release are its, not the lock's).
            let o = stretches
                .get_or_insert_with(|| HolderStretches::of(a))
                .overlap(a, object, rule.param("parked_max_running"));
            if o.wait_ns > 0
                && o.in_condition_ns as f64 >= o.wait_ns as f64 * rule.param("min_away_share")
            {
                continue;
            }
        }
        let waiter_life: u64 = h
            .waiters
            .iter()
            .filter_map(|&i| a.profile.threads.get(i))
            .map(|t| t.life_ns(a.profile.thread_end_ns(t)))
            .sum();
        let share = ratio(h.wait_ns, waiter_life).min(1.0);
        let Some(severity) = rule.severity_of(share) else {
            continue;
        };
        let in_part = |state: Category| match away {
            Away::Io => state == Category::Io,
            Away::Asleep => HolderTime::is_asleep(state),
        };
        let calls: Vec<_> = h.activities.iter().filter(|x| in_part(x.state())).collect();
        let Some(top) = calls.first() else {
            continue;
        };
        let summary = a.summary.locks.iter().find(|s| s.address == object);
        // Named as the contention rules name it: a runtime's lock by its kind and where it was
        // taken (`parking_lot::Mutex taken in count_word at pl_mutex.rs:12`), not by an address.
        let lock = match summary {
            Some(l) if l.runtime.is_some() => {
                let (kind, name) = super::contention::lock_kind_and_name(a, l);
                format!("{kind} {name}")
            }
            _ => a.object_name(object),
        };
        let waiter = summary
            .and_then(|s| s.sites.first())
            .and_then(|s| s.user_frame())
            .map_or_else(|| super::view::UNKNOWN_FRAME.into(), |f| f.short_text());
        let plural = h.holders.len() > 1;
        let mut evidence = vec![
            format!(
                "{} waits for {lock} took {} ({} of the waiting threads' time); the waiters were at {waiter}",
                fmt_count(h.waits),
                fmt_ns(h.wait_ns),
                fmt_pct(share)
            ),
            format!(
                "while they waited, the holder{} spent {} of {} sampled time {}: {}",
                if plural { "s" } else { "" },
                fmt_pct(h.share(part_ns)),
                if plural { "their" } else { "its" },
                match away {
                    Away::Io => "in I/O",
                    Away::Asleep => "asleep",
                },
                calls
                    .iter()
                    .take(3)
                    .map(|x| format!("{} {}", x.text(), fmt_pct(h.share(x.ns))))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "holders: {}",
                h.holders
                    .iter()
                    .map(|&i| a.label_at(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "stake (estimated): up to {} of waiting removable, the waits times the holder's {} share in them",
                fmt_ns(stake_ns),
                match away {
                    Away::Io => "I/O",
                    Away::Asleep => "sleep",
                }
            ),
        ];
        evidence.dedup();
        let finding = build(
            rule,
            a,
            severity,
            &[
                ("lock", lock),
                ("call", top.text()),
                ("syscall", top.function.clone()),
                ("wait", fmt_ns(h.wait_ns)),
                ("share", fmt_pct(share)),
                ("away_share", fmt_pct(h.share(part_ns))),
                ("stake", fmt_ns(stake_ns)),
            ],
            evidence,
        );
        found.push((share, finding));
    }
    found.sort_by(|x, y| y.0.total_cmp(&x.0));
    found.into_iter().take(3).map(|(_, f)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::samples::{Sample, SampleKind, Wait, WaitKind};
    use crate::profile::{Profile, ThreadStats};

    const MS: u64 = 1_000_000;
    const LOCK: u64 = 0x5000;

    /// Thread 2 waits 500 ms for the lock thread 1 holds; thread 1 meanwhile is in the system
    /// call `syscall` (wall samples every 10 ms), or in a condition wait.
    fn held_while(syscall: Option<u32>, condition: bool) -> Analysis {
        let mut p = Profile::default();
        p.process.ncpus = 2;
        p.last_mono_ns = 1000 * MS;
        p.threads = vec![
            ThreadStats::quiet(1, 101, "main", 0, 1000 * MS),
            ThreadStats::quiet(2, 102, "io", 0, 1000 * MS),
        ];
        let wait = |serial, kind, object, other_tid| Wait {
            serial,
            start_mono_ns: 100 * MS,
            end_mono_ns: 600 * MS,
            object,
            other_tid,
            kind,
            lock_kind: None,
            notification: None,
            rewait: false,
            woken_before_end_ns: None,
        };
        p.waits.push(wait(2, WaitKind::Lock, LOCK, Some(101)));
        if condition {
            p.waits
                .push(wait(1, WaitKind::Condition, 0x6000, Some(102)));
        }
        if let Some(nr) = syscall {
            for k in 11..=60 {
                p.samples.push(Sample {
                    serial: 1,
                    mono_ns: k * 10 * MS,
                    pc: 0,
                    stack: None,
                    weight_ns: 10 * MS,
                    kind: SampleKind::Wall,
                    state: Some('S'),
                    syscall: Some(nr),
                    arg: 0,
                    object: 0,
                });
            }
        }
        Analysis {
            profile: p,
            ..Analysis::default()
        }
    }

    #[test]
    fn a_holder_waiting_for_input_while_nothing_runs_parks_the_waiters() {
        let overlap = |a: &Analysis| HolderStretches::of(a).overlap(a, LOCK, 0.5);
        // epoll_wait (232): the program waits for a client; nothing of it runs.
        let epoll = held_while(Some(232), false);
        let o = overlap(&epoll);
        assert_eq!(o.wait_ns, 500 * MS);
        assert_eq!(o.parked_ns, 500 * MS, "{o:?}");
        assert_eq!(parked_locks(&epoll), Vec::<u64>::new(), "not a listed lock");
        // A timed sleep (nanosleep, 35) holding the lock is no wait for input.
        let sleep = overlap(&held_while(Some(35), false));
        assert_eq!(sleep.parked_ns, 0, "{sleep:?}");
        // A condition wait releases its mutex.
        let cond = overlap(&held_while(None, true));
        assert_eq!(cond.in_condition_ns, 500 * MS, "{cond:?}");
    }

    /// Holder time of one lock: `holders` held it while `waiters` waited; inside the waits the
    /// holders were in each (function, state, ns).
    fn holder_time(
        holders: &[usize],
        waiters: &[usize],
        acts: &[(&str, Category, u64)],
    ) -> HolderTime {
        use crate::analysis::waitfor::Activity;
        HolderTime {
            waits: 20,
            wait_ns: 100 * MS,
            sampled_ns: acts.iter().map(|x| x.2).sum(),
            activities: acts
                .iter()
                .map(|&(function, category, ns)| Activity {
                    category,
                    function: function.into(),
                    ns,
                    ..Activity::default()
                })
                .collect(),
            holders: holders.to_vec(),
            waiters: waiters.to_vec(),
            ..HolderTime::default()
        }
    }

    #[test]
    fn a_lock_that_keeps_idle_threads_asleep_is_a_gate_not_a_critical_section() {
        let gate = |h: &HolderTime, hold: Option<f64>| is_gate(h, hold, 0.2, 20_000.0);
        // redis --io-threads: the main thread holds the I/O thread's mutex while it serves the
        // clients itself (reads, writes) and waits for them in epoll_wait; the I/O thread takes
        // the mutex and releases it at once (a few hundred ns per timed hold).
        let serving = [
            ("write", Category::Io, 40 * MS),
            ("read", Category::Io, 20 * MS),
            ("epoll_wait", Category::Blocked, 25 * MS),
            ("aeMain", Category::Compute, 15 * MS),
        ];
        let redis = holder_time(&[0], &[1], &serving);
        assert!(gate(&redis, Some(400.0)));
        assert!(gate(&redis, None), "no hold timed says nothing against it");
        // Waiters that work under the lock (a mean hold of 2 ms) need it: a critical section.
        assert!(!gate(&redis, Some(2e6)));
        // Threads that all hold it and wait for it in turn: a critical section.
        assert!(!gate(&holder_time(&[0, 1], &[1, 0], &serving), None));
        // A holder in fdatasync and write, never waiting for input: the lock is held across I/O.
        let fsync = holder_time(
            &[0],
            &[1],
            &[
                ("fdatasync", Category::Io, 80 * MS),
                ("write", Category::Io, 20 * MS),
            ],
        );
        assert!(!gate(&fsync, Some(400.0)));
        // A timed sleep is no wait for input.
        let sleep = holder_time(
            &[0],
            &[1],
            &[("clock_nanosleep", Category::Blocked, 100 * MS)],
        );
        assert!(!gate(&sleep, None));
        // Waiting for input a sliver of the time (under 20%) does not make it one.
        let little = holder_time(
            &[0],
            &[1],
            &[
                ("write", Category::Io, 90 * MS),
                ("epoll_wait", Category::Blocked, 10 * MS),
            ],
        );
        assert!(!gate(&little, None));
    }
}
