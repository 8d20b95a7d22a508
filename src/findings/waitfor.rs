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
    for object in objects {
        let Some(h) = w.holder_time(object) else {
            continue;
        };
        let (part_ns, stake_ns) = match away {
            Away::Io => (h.io_ns, h.io_stake_ns),
            Away::Asleep => (h.asleep_ns, h.asleep_stake_ns),
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
