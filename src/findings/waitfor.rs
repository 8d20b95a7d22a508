//! Detectors over the wait-for edges (docs/WAITFOR.md): a lock held across I/O.

use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::states::Category;
use crate::analysis::waitfor::Activity;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};
use std::collections::BTreeMap;

/// A lock whose holders were in I/O (their own samples inside the waits of others) for at least
/// `min_io_share` of the time others waited for it. The measure is the waiting threads' share of
/// their lives spent waiting for that lock; the stake is the waiting that overlapped the
/// holder's I/O (the waits times the holder's I/O share in them): what moving the I/O out of the
/// critical section could remove.
pub fn lock_across_io(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(w) = &a.waitfor else {
        return Vec::new();
    };
    #[derive(Default)]
    struct PerLock {
        wait_ns: u64,
        waits: u64,
        sampled_ns: u64,
        io_ns: u64,
        stake_ns: f64,
        waiters: Vec<usize>,
        holders: Vec<usize>,
        io: BTreeMap<String, Activity>,
    }
    let mut locks: BTreeMap<u64, PerLock> = BTreeMap::new();
    for e in w
        .edges
        .iter()
        .filter(|e| e.kind == Some(crate::profile::format::WaitKind::Lock) && e.other.is_some())
    {
        let l = locks.entry(e.object).or_default();
        l.wait_ns = l.wait_ns.saturating_add(e.wait_ns);
        l.waits += e.waits;
        l.sampled_ns = l.sampled_ns.saturating_add(e.other_sampled_ns);
        l.stake_ns += e.wait_ns as f64 * e.other_share(Category::Io);
        if !l.waiters.contains(&e.waiter) {
            l.waiters.push(e.waiter);
        }
        if let Some(o) = e.other
            && !l.holders.contains(&o)
        {
            l.holders.push(o);
        }
        for act in e
            .activities
            .iter()
            .filter(|x| x.category == Category::Io || x.in_io_call)
        {
            l.io_ns = l.io_ns.saturating_add(act.ns);
            let entry = l.io.entry(act.text()).or_insert_with(|| Activity {
                ns: 0,
                ..act.clone()
            });
            entry.ns = entry.ns.saturating_add(act.ns);
        }
    }
    let mut found: Vec<(f64, Finding)> = Vec::new();
    for (object, l) in locks {
        let io_share = ratio(l.io_ns, l.sampled_ns);
        if (l.wait_ns as f64) < rule.param("min_wait_ns") || io_share < rule.param("min_io_share") {
            continue;
        }
        let waiter_life: u64 = l
            .waiters
            .iter()
            .filter_map(|&i| a.profile.threads.get(i))
            .map(|t| t.life_ns(a.profile.thread_end_ns(t)))
            .sum();
        let share = ratio(l.wait_ns, waiter_life).min(1.0);
        let Some(severity) = rule.severity_of(share) else {
            continue;
        };
        let mut io: Vec<Activity> = l.io.into_values().collect();
        io.sort_by_key(|x| std::cmp::Reverse(x.ns));
        let Some(top) = io.first() else {
            continue;
        };
        let lock = a.object_name(object);
        let waiter = a
            .summary
            .locks
            .iter()
            .find(|s| s.address == object)
            .and_then(|s| s.sites.first())
            .and_then(|s| s.user_frame())
            .map_or_else(|| super::view::UNKNOWN_FRAME.into(), |f| f.short_text());
        let mut evidence = vec![
            format!(
                "{} waits for {lock} took {} ({} of the waiting threads' time); the waiters were at {waiter}",
                fmt_count(l.waits),
                fmt_ns(l.wait_ns),
                fmt_pct(share)
            ),
            format!(
                "while they waited, the holder{} spent {} of {} sampled time in I/O: {}",
                if l.holders.len() > 1 { "s" } else { "" },
                fmt_pct(io_share),
                if l.holders.len() > 1 { "their" } else { "its" },
                io.iter()
                    .take(3)
                    .map(|x| format!("{} {}", x.text(), fmt_pct(ratio(x.ns, l.sampled_ns))))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "holders: {}",
                l.holders
                    .iter()
                    .map(|&i| a.label_at(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "stake (estimated): up to {} of waiting removable, the waits times the holder's I/O share in them",
                fmt_ns(l.stake_ns)
            ),
        ];
        evidence.dedup();
        found.push((
            share,
            build(
                rule,
                a,
                severity,
                &[
                    ("lock", lock),
                    ("io", top.text()),
                    ("syscall", top.function.clone()),
                    ("wait", fmt_ns(l.wait_ns)),
                    ("share", fmt_pct(share)),
                    ("io_share", fmt_pct(io_share)),
                    ("stake", fmt_ns(l.stake_ns)),
                ],
                evidence,
            ),
        ));
    }
    found.sort_by(|x, y| y.0.total_cmp(&x.0));
    found.into_iter().take(3).map(|(_, f)| f).collect()
}
