//! Detectors over waiting: pthread lock contention, locks inside the C library and atomics (from
//! thread-state sampling, docs/STATES.md).

use super::rules::Rule;
use super::view::{UNKNOWN_FRAME, caught_locks_evidence, frame_text, lock_site_user_text};
use super::{Finding, Severity, build};
use crate::analysis::Analysis;
use crate::analysis::states::Category;
use crate::analysis::summary::LockSummary;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};

/// Contention on pthread locks.
pub fn pthread_locks(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    lock_contention(rule, a, false)
}

/// Contention on the locks of runtimes that wait on futex words (Rust's std, parking_lot, ...),
/// named in the runtime's words at the user's line.
pub fn runtime_locks(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    lock_contention(rule, a, true)
}

/// A lock's kind (`pthread mutex`, `parking_lot::Mutex`) and its name: its symbol, where it was
/// initialised, or, for a runtime that parks each thread on its own word, where it was taken
/// (not an address).
pub fn lock_kind_and_name(
    a: &Analysis,
    lock: &crate::analysis::summary::LockSummary,
) -> (String, String) {
    let kind = match &lock.runtime {
        Some(r) => r.object.clone(),
        None => format!("pthread {}", lock.kind),
    };
    let name = match lock.runtime.as_ref().and_then(|r| r.taken_at.as_ref()) {
        Some(f) => format!("taken in {}", f.short_text()),
        None => a.object_name(lock.address),
    };
    (kind, name)
}

/// Lock sites by the place a user reads (their user frame), each place once with the waiting of
/// all its sites, in the order of each place's first site. Two stacks that differ only below the
/// user frame are one place: GNU sort's merge threads read "waiter: 55.1% of the wait at
/// sort+0xb25c" and "waiter: 44.9% of the wait at sort+0xb25c" as two lines.
fn by_place(sites: &[&crate::analysis::sites::LockSiteSummary]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for site in sites {
        let place = lock_site_user_text(site).unwrap_or_else(|| UNKNOWN_FRAME.into());
        match out.iter_mut().find(|(p, _)| *p == place) {
            Some(entry) => entry.1 = entry.1.saturating_add(site.wait_ns),
            None => out.push((place, site.wait_ns)),
        }
    }
    out
}

fn lock_contention(rule: &Rule, a: &Analysis, runtime: bool) -> Vec<Finding> {
    let s = &a.summary;
    let waiter_wall: f64 = s
        .threads
        .iter()
        .filter(|t| t.lock_wait_ns > 0)
        .map(|t| t.wall_ns as f64)
        .sum();
    let mut found: Vec<(f64, Finding)> = Vec::new();
    let turns = super::causes::turns_cause(a);
    let mut parked: Option<Vec<u64>> = None;
    for lock in s.locks.iter().filter(|l| l.runtime.is_some() == runtime) {
        // The timed waits, or, where more, the time the samples put on the lock at the places
        // that wait on it: spinning before sleeping, and the atomic operations of its
        // acquisitions and releases while its word's cache line moves between the cores.
        let traffic = lock_traffic_ns(a, lock);
        let wait = (lock.wait_ns as f64).max(traffic);
        if wait < rule.param("min_wait_ns") {
            continue;
        }
        // The object threads take turns on, or its mutex: the taking-turns finding's.
        if let Some(t) = &turns {
            let waiters = a
                .waitfor
                .as_ref()
                .and_then(|w| w.holder_time(lock.address))
                .map(|h| h.waiters.clone())
                .unwrap_or_default();
            if t.covers(a, lock.address, &waiters, false) {
                continue;
            }
        }
        // The waiting threads' time, so that idle threads (a main thread in join) do not dilute it.
        let share = ratio(wait, waiter_wall).min(1.0);
        let Some(mut severity) = rule.severity_of(share) else {
            continue;
        };
        // What the holders did while this lock was waited for (the wait-for edges). A lock whose
        // holders were mostly in I/O or asleep is reported as such (lock-held-across-io,
        // lock-held-while-asleep), not as the contention of a holder at work.
        let holder = a.waitfor.as_ref().and_then(|w| w.holder_time(lock.address));
        if holder.as_ref().is_some_and(|h| {
            super::waitfor::holders_away(
                h,
                rule.param("max_holder_away_share"),
                rule.param("holder_away_min_mean_wait_ns"),
            )
        }) {
            continue;
        }
        // A lock that parks threads with nothing to do: its waiters wait for work.
        if holder.is_some()
            && parked
                .get_or_insert_with(|| super::waitfor::parked_locks(a))
                .contains(&lock.address)
        {
            continue;
        }
        let (kind, address) = lock_kind_and_name(a, lock);
        let mut evidence = vec![format!(
            "{} of waiting in {} contended of {} acquisitions by {} threads (longest wait {})",
            fmt_ns(lock.wait_ns as f64),
            fmt_count(lock.contended),
            fmt_count(lock.acquisitions),
            lock.threads,
            fmt_ns(lock.max_wait_ns)
        )];
        if traffic > lock.wait_ns as f64 {
            evidence.push(format!(
                "{} sampled on the lock where threads wait for it: spinning, sleeping, and the \
                 atomic operations of its acquisitions and releases (its word's cache line moving \
                 between the cores)",
                fmt_ns(traffic)
            ));
        }
        let mut waiters: Vec<_> = lock.sites.iter().collect();
        waiters.sort_by_key(|s| std::cmp::Reverse(s.wait_ns));
        let max_sites = rule.param("max_sites") as usize;
        for (place, wait_ns) in by_place(&waiters).into_iter().take(max_sites) {
            evidence.push(format!(
                "waiter: {} of the wait at {place}",
                fmt_pct(ratio(wait_ns, lock.wait_ns)),
            ));
        }
        // Of the waits whose waker is known, the share that was the waiters' wake-up after the
        // release (futex and mutex waits that know when they were woken).
        let tail_share = holder.map_or(0.0, |h| ratio(h.woken_tail_ns, h.wait_ns));
        if tail_share > 0.0 {
            evidence.push(format!(
                "{} of the waiting whose waker is known was the waiters waking up after the \
                 holder woke them, the lock already released (the holder's work then is not \
                 counted below)",
                fmt_pct(tail_share)
            ));
        }
        if let Some(h) = holder.filter(|h| !h.activities.is_empty()) {
            evidence.push(format!(
                "while threads waited, the holder was in: {}",
                h.activities
                    .iter()
                    .take(max_sites)
                    .map(|x| format!(
                        "{} ({}) {}",
                        x.text(),
                        x.state().words(),
                        fmt_pct(h.share(x.ns))
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let held: Vec<_> = lock.holder_sites.iter().take(max_sites).collect();
        for (user, _) in by_place(&held) {
            if user != UNKNOWN_FRAME {
                evidence.push(format!("holder: the lock was held at {user}"));
            }
        }
        let waiter = waiters
            .first()
            .and_then(|s| lock_site_user_text(s))
            .unwrap_or_else(|| UNKNOWN_FRAME.into());
        // Where much of the waiting is the waiters' wake-up after the release, the lock changes
        // hands too often for a shorter hold to help much: each hand-off costs a wake-up.
        let handoff = if tail_share >= rule.param("handoff_tail_share") {
            format!(
                " And {} of that waiting was the waiters waking up after the holder had \
                 released it and woken them: each hand-off of the lock costs a wake-up, so fewer \
                 hand-offs (more work per acquisition, or per-thread accumulation merged at the \
                 end) shorten it where a shorter hold cannot.",
                fmt_pct(tail_share)
            )
        } else {
            String::new()
        };
        // A holder that mostly waited for a CPU while others waited for it had been preempted
        // with the lock held: the waiting grows with the threads that want the CPUs, not with
        // the hold (rustc under a loaded `cargo build`: one 8.34 ms wait on jemalloc's mutex read
        // MEDIUM while its holder sat on a run queue). At most LOW: the remedy is CPUs.
        let preempted_share =
            holder.map_or(0.0, |h| h.share_where(|x| x.state() == Category::Runnable));
        let preempted = if preempted_share >= rule.param("holder_preempted_share") {
            severity = severity.max(Severity::Low);
            format!(
                " While they waited, its holder waited for a CPU {} of its sampled time: it had \
                 been preempted with the lock held, so this waiting grows with the threads (and \
                 other processes) that want the CPUs more than with the hold; fewer runnable \
                 threads than CPUs shorten it where a shorter hold cannot.",
                fmt_pct(preempted_share)
            )
        } else {
            String::new()
        };
        found.push((
            wait,
            build(
                rule,
                a,
                severity,
                &[
                    ("share", fmt_pct(share)),
                    ("kind", kind),
                    ("address", address),
                    (
                        "runtime",
                        lock.runtime
                            .as_ref()
                            .map(|r| r.runtime.clone())
                            .unwrap_or_default(),
                    ),
                    ("waiter", waiter),
                    ("hold", hold_words(lock, a.summary.lock_timing_period)),
                    ("wait", fmt_ns(wait)),
                    ("contended", fmt_count(lock.contended)),
                    ("handoff", handoff),
                    ("preempted", preempted),
                ],
                evidence,
            ),
        ));
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    found.into_iter().take(3).map(|(_, f)| f).collect()
}

/// The functions that wait on `lock` (its waiter sites' user frames, without templates).
fn waiter_functions(lock: &LockSummary) -> Vec<String> {
    let mut names: Vec<String> = lock
        .sites
        .iter()
        .filter_map(|s| s.user_frame())
        .filter(|f| f.function.is_some())
        .map(|f| f.short_name())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Sampled time, over all threads, in the lock and atomic states at the functions that wait on
/// `lock`: a lock-state site that caught another lock word does not count. A contended lock
/// costs its waiters more than their sleeps: the spinning before them, and the acquisitions and
/// releases that find its cache line on another core (std's Mutex: the fast path's
/// compare-and-swap and the guard's release, sampled as atomic operations).
fn lock_traffic_ns(a: &Analysis, lock: &LockSummary) -> f64 {
    let Some(states) = &a.states else {
        return 0.0;
    };
    let waiters = waiter_functions(lock);
    if waiters.is_empty() || lock.contended == 0 {
        return 0.0;
    }
    let mut ns = 0.0;
    for t in &states.threads {
        let total = t.sampled_ns() as f64;
        for category in [Category::Lock, Category::Atomic] {
            for site in t.listed_sites(category) {
                if !site.locks.is_empty() && site.locks.iter().all(|l| l.object != lock.address) {
                    continue;
                }
                let at_waiter = site
                    .user_frame()
                    .filter(|f| f.function.is_some())
                    .is_some_and(|f| waiters.contains(&f.short_name()));
                if at_waiter {
                    ns += t.site_share(site) * total;
                }
            }
        }
    }
    ns
}

/// The functions whose atomic operations are a contended lock's own traffic: those that wait on
/// a lock the lock findings report (`lock_traffic_ns` counts them there). One cause, one finding.
fn lock_claimed_functions(a: &Analysis) -> Vec<String> {
    let rules = super::rules::rules();
    let waiter_wall: f64 = a
        .summary
        .threads
        .iter()
        .filter(|t| t.lock_wait_ns > 0)
        .map(|t| t.wall_ns as f64)
        .sum();
    let mut claimed = Vec::new();
    for lock in &a.summary.locks {
        let id = if lock.runtime.is_some() {
            "runtime-lock-contention"
        } else {
            "lock-contention"
        };
        let Some(rule) = rules.iter().find(|r| r.id == id) else {
            continue;
        };
        let wait = (lock.wait_ns as f64).max(lock_traffic_ns(a, lock));
        if wait < rule.param("min_wait_ns")
            || rule
                .severity_of(ratio(wait, waiter_wall).min(1.0))
                .is_none()
        {
            continue;
        }
        claimed.extend(waiter_functions(lock));
    }
    claimed
}

/// How long a lock was held in all, as the timed holds estimate it; with too few of them timed
/// (a lock taken fewer times than the timing period, such as GNU sort's 91 acquisitions) it is
/// not known, which "0 ns held in total" had said, and, from one short hold timed, "398.1 µs
/// held in total" beside 288 ms of waiting for it.
fn hold_words(lock: &LockSummary, period: u32) -> String {
    match lock.hold_known() {
        Some(hold) => format!("{} held in total", fmt_ns(hold)),
        None => format!(
            "how long is not known: {} of its {} holds {} among the 1 in {period} timed",
            fmt_count(lock.timed_holds),
            fmt_count(lock.acquisitions),
            if lock.timed_holds == 1 { "was" } else { "were" }
        ),
    }
}

/// Sampled time in one state category at one innermost function, over all threads.
struct StateGroup {
    function: String,
    ns: f64,
    samples: f64,
    /// Sampled time of the threads that were seen there, and their samples.
    threads_ns: f64,
    threads_samples: f64,
    users: Vec<(String, f64)>,
    /// Lock waits: the locks named by the futex words its samples caught, with those samples.
    locks: Vec<(String, u64)>,
    /// A lock of libc that only its debug file would name was among them.
    unnamed_libc_lock: bool,
    /// The lock word its sites caught most (lock waits): the group's identity.
    lock: Option<u64>,
    /// The threads (their index) counted in `threads_ns`: a thread with several sites in the
    /// group counts once.
    seen: Vec<usize>,
}

/// `libc.so.6` for a function shown as `libc.so.6+0xc547b` (no symbol: a static function of a
/// library without its debug file). Its sites are grouped by module, not by address, so that
/// one lock waited on from several such functions is one finding.
fn unsymbolized_module(function: &str) -> Option<&str> {
    let (module, offset) = function.split_once("+0x")?;
    (!module.is_empty() && !module.contains(' ') && offset.chars().all(|c| c.is_ascii_hexdigit()))
        .then_some(module)
}

/// Groups the sites the report lists for `category` in every thread (`state_sites`) by function
/// (functions starting with one of `exclude` are left out), largest first. A site's time counts
/// as its share of the thread's life times the thread's sampled time.
fn state_groups(a: &Analysis, category: Category, exclude: &[String]) -> Vec<StateGroup> {
    let mut groups: Vec<StateGroup> = Vec::new();
    let Some(states) = &a.states else {
        return groups;
    };
    // Atomic operations where threads wait on a reported lock are that lock's finding.
    let claimed = if category == Category::Atomic {
        lock_claimed_functions(a)
    } else {
        Vec::new()
    };
    for (index, t) in states.threads.iter().enumerate() {
        let total = t.sampled_ns() as f64;
        for site in t.listed_sites(category) {
            // A runtime's lock (its entry point decided the sample, or its futex word is known):
            // counted exactly in the lock list and found by `runtime_locks`.
            let runtime_decided = site
                .decided_by
                .and_then(|i| site.frames.get(i))
                .and_then(|f| f.function.as_deref())
                .is_some_and(|n| crate::analysis::runtime::entry_for(n).is_some())
                // Inside a TBB mutex's acquisition (one that reports through ITT is in the lock
                // list; one that sleeps on a futex word is that word's).
                || crate::analysis::futex::in_tbb_acquisition(&site.frames);
            // malloc's arena locks are the arena-lock finding's (findings/scaling.rs): one
            // lock, one finding.
            let arena = crate::analysis::locknames::is_arena_wait(site);
            if category == Category::Lock
                && (runtime_decided
                    || arena
                    || (!site.locks.is_empty()
                        && site
                            .locks
                            .iter()
                            .all(|l| matches!(l.how, "runtime" | "pthread"))))
            {
                continue;
            }
            if !claimed.is_empty()
                && site
                    .user_frame()
                    .filter(|f| f.function.is_some())
                    .is_some_and(|f| claimed.contains(&f.short_name()))
            {
                continue;
            }
            let function = site.function();
            if exclude.iter().any(|p| function.starts_with(p.as_str())) {
                continue;
            }
            let function = unsymbolized_module(&function)
                .map(|m| format!("a function of {m} without symbols"))
                .unwrap_or(function);
            let ns = t.site_share(site) * total;
            let samples = site.samples as f64;
            let user = site
                .user_frame()
                .map(frame_text)
                .unwrap_or_else(|| UNKNOWN_FRAME.into());
            // One lock, one finding: sites that caught the same lock word are one group,
            // whichever functions waited on it.
            let lock = (category == Category::Lock)
                .then(|| site.lock().map(|l| l.object))
                .flatten();
            let at = groups.iter().position(|g| match lock {
                Some(_) => g.lock == lock,
                None => g.lock.is_none() && g.function == function,
            });
            let g = match at {
                Some(i) => {
                    let g = &mut groups[i];
                    if !g.function.split(" and ").any(|f| f == function) {
                        g.function = format!("{} and {function}", g.function);
                    }
                    g
                }
                None => {
                    groups.push(StateGroup {
                        lock,
                        function,
                        ns: 0.0,
                        samples: 0.0,
                        threads_ns: 0.0,
                        threads_samples: 0.0,
                        users: Vec::new(),
                        locks: Vec::new(),
                        unnamed_libc_lock: false,
                        seen: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.ns += ns;
            g.samples += samples;
            if !g.seen.contains(&index) {
                g.seen.push(index);
                g.threads_ns += total;
                g.threads_samples += t.samples as f64;
            }
            match g.users.iter_mut().find(|u| u.0 == user) {
                Some(u) => u.1 += ns,
                None => g.users.push((user, ns)),
            }
            for l in &site.locks {
                g.unnamed_libc_lock |= l.how == "libc-address";
                match g.locks.iter_mut().find(|n| n.0 == l.name) {
                    Some(n) => n.1 += l.samples,
                    None => g.locks.push((l.name.clone(), l.samples)),
                }
            }
        }
    }
    groups.sort_by(|a, b| b.ns.total_cmp(&a.ns));
    groups
}

/// Findings for sampled time in one category (`lock` inside glibc, `atomic`), one per function.
fn state_findings(rule: &Rule, a: &Analysis, category: Category) -> Vec<Finding> {
    let exclude = rule.param_strings("exclude_prefixes");
    let category_total = a.states.as_ref().map_or(0, |r| r.category_ns(category));
    let turns = super::causes::turns_cause(a);
    state_groups(a, category, &exclude)
        .into_iter()
        .filter(|g| match (&turns, g.lock) {
            // The object threads take turns on, or its mutex: the taking-turns finding's.
            (Some(t), Some(lock)) => !t.covers(a, lock, &g.seen, true),
            _ => true,
        })
        .take(2)
        .filter_map(|mut g| {
            let share = ratio(g.ns, g.threads_ns).min(1.0);
            // From `min_samples` samples on, the share is taken as measured. From fewer (a short
            // run), by what its samples show at least: two threads of an 80 ms program waiting
            // 67-85% of their lives on random()'s lock left 13 samples there and had no finding,
            // while 13 of 19 samples show at least 44%.
            let severity = if g.samples >= rule.param("min_samples") {
                rule.severity_of(share)?
            } else {
                let by_samples = ratio(g.samples, g.threads_samples).min(1.0);
                let low = crate::util::share_lower_bound(by_samples, g.threads_samples);
                rule.severity_of(low.min(share))?
            };
            g.users.sort_by(|a, b| b.1.total_cmp(&a.1));
            g.locks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let lock = g
                .locks
                .first()
                .map_or_else(|| "a lock".to_string(), |l| l.0.clone());
            let mut evidence = vec![format!(
                "{} sampled in {} ({} samples), {} of the sampled time of the threads seen there; {} in the {} state over all threads",
                fmt_ns(g.ns),
                g.function,
                fmt_count(g.samples as u64),
                fmt_pct(share),
                fmt_ns(category_total),
                category.key()
            )];
            for (user, ns) in g.users.iter().take(rule.param("max_sites") as usize) {
                evidence.push(format!(
                    "called from {user}: {} of that time",
                    fmt_pct(ratio(*ns, g.ns))
                ));
            }
            evidence.extend(caught_locks_evidence(
                g.locks.iter().map(|(name, n)| (name.as_str(), *n)),
                g.samples as u64,
            ));
            if g.unnamed_libc_lock {
                evidence.push(format!(
                    "the lock is unnamed: {}",
                    crate::analysis::locknames::DEBUG_FILE_HINT
                ));
            }
            let advice = lock_advice(rule, &lock);
            Some(build(
                rule,
                a,
                severity,
                &[
                    ("share", fmt_pct(share)),
                    ("function", g.function),
                    ("lock", lock),
                    ("advice", advice),
                ],
                evidence,
            ))
        })
        .collect()
}

/// The remedy's advice for the lock the samples caught: the rule's `lock_advice` entry whose
/// `lock` the lock's words contain (the time zone lock wants another fix than random()'s), else
/// its general `advice`.
fn lock_advice(rule: &Rule, lock: &str) -> String {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    rule.params
        .get("lock_advice")
        .and_then(|v| v.as_array())
        .and_then(|list| {
            list.iter()
                .find(|e| e["lock"].as_str().is_some_and(|k| lock.contains(k)))
        })
        .and_then(|e| text(&e["advice"]))
        .or_else(|| rule.params.get("advice").and_then(text))
        .unwrap_or_default()
}

pub fn internal_locks(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    state_findings(rule, a, Category::Lock)
}

pub fn atomics(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    state_findings(rule, a, Category::Atomic)
}

#[cfg(test)]
#[path = "contention_tests.rs"]
mod tests;
