use super::*;
use crate::analysis::sites::LockSiteSummary;
use crate::analysis::states::{CATEGORY_COUNT, StateReport, StateSite, ThreadStates, WaitedLock};
use crate::analysis::summary::{LockSummary, Summary, ThreadSummary};
use crate::findings::Severity;
use crate::findings::test_support::{check_levels, frame, rule};

fn severity(findings: &[Finding]) -> Option<Severity> {
    assert!(findings.len() <= 1, "{findings:?}");
    findings.first().map(|f| f.severity)
}

/// Two threads of 100 ms each; one lock on which they waited `wait_ns` in total.
fn locked(wait_ns: f64) -> Analysis {
    let thread = |tid, wall_ns, lock_wait_ns: f64| ThreadSummary {
        tid,
        wall_ns,
        lock_wait_ns: lock_wait_ns as u64,
        ..ThreadSummary::default()
    };
    Analysis {
        summary: Summary {
            command: vec!["./bank".into()],
            threads: vec![
                thread(1, 100_000_000, wait_ns / 2.0),
                thread(2, 100_000_000, wait_ns / 2.0),
                thread(3, 900_000_000, 0.0),
            ],
            locks: vec![LockSummary {
                address: 0x1000,
                kind: "mutex",
                acquisitions: 1000,
                contended: 300,
                wait_ns: wait_ns as u64,
                max_wait_ns: 1000,
                hold_ns: 5_000_000,
                timed_holds: 40,
                threads: 2,
                sites: vec![LockSiteSummary {
                    frames: vec![frame(Some("transfer(int)"), Some(("/src/bank.c", 40)), "")],
                    user: 0,
                    wait_ns: wait_ns as u64,
                    contended: 300,
                    ..LockSiteSummary::default()
                }],
                runtime: None,
                holder_sites: vec![LockSiteSummary {
                    frames: vec![frame(Some("audit"), None, "/bin/bank")],
                    user: 0,
                    ..LockSiteSummary::default()
                }],
            }],
            ..Summary::default()
        },
        ..Analysis::default()
    }
}

#[test]
fn pthread_lock_thresholds_against_the_waiters_time() {
    let r = rule("lock-contention");
    // The share is of the waiting threads' 200 ms, not of the idle third thread's time.
    check_levels(r, |share| {
        severity(&pthread_locks(r, &locked(share * 200_000_000.0)))
    });
}

#[test]
fn pthread_lock_names_waiter_and_holder_and_bench_command() {
    let r = rule("lock-contention");
    let f = &pthread_locks(r, &locked(100_000_000.0))[0];
    assert!(f.title.contains("transfer at bank.c:40"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("held at audit (bank)")),
        "{f:?}"
    );
    assert!(
        f.remedy
            .contains("`stallscope bench --threads 1,2,4 './bank --threads {threads}'`"),
        "{}",
        f.remedy
    );
}

#[test]
fn sites_at_one_place_are_one_waiter_and_one_holder_line() {
    // GNU sort --parallel=2: two stacks at one user frame, 55.1% and 44.9% of the wait, and two
    // holder stacks at one frame, had read as two lines each with the same place.
    let r = rule("lock-contention");
    let mut a = locked(100_000_000.0);
    let lock = &mut a.summary.locks[0];
    let mut second = lock.sites[0].clone();
    lock.sites[0].wait_ns = 55_100_000;
    second.wait_ns = 44_900_000;
    second
        .frames
        .push(frame(Some("merge_loop"), None, "/bin/bank"));
    lock.sites.push(second);
    let other_stack = LockSiteSummary {
        frames: vec![
            frame(Some("audit"), None, "/bin/bank"),
            frame(Some("main"), None, "/bin/bank"),
        ],
        ..LockSiteSummary::default()
    };
    lock.holder_sites.push(other_stack);
    let f = &pthread_locks(r, &a)[0];
    let waiters: Vec<&String> = f
        .evidence
        .iter()
        .filter(|e| e.starts_with("waiter:"))
        .collect();
    assert_eq!(
        waiters,
        vec!["waiter: 100.0% of the wait at transfer at bank.c:40"],
        "{f:?}"
    );
    let holders = f.evidence.iter().filter(|e| e.starts_with("holder:"));
    assert_eq!(holders.count(), 1, "{f:?}");
}

#[test]
fn one_short_contended_lock_is_quiet() {
    let r = rule("lock-contention");
    let min_wait = r.param("min_wait_ns");
    let mut short = locked(min_wait * 0.99);
    // Even when it is most of the waiters' (short) time.
    for t in &mut short.summary.threads {
        t.wall_ns = min_wait as u64;
    }
    assert!(pthread_locks(r, &short).is_empty());
}

/// Two threads with sampled states of 1 s each; `share` of each in `function` (category `lock`
/// or `atomic`) over `samples` samples per thread.
fn sampled(category: Category, function: &str, share: f64, samples: u64) -> Analysis {
    let thread = |tid: u32| {
        let mut ns = [0u64; CATEGORY_COUNT];
        ns[Category::Compute.index()] = ((1.0 - share) * 1e9) as u64;
        ns[category.index()] = (share * 1e9) as u64;
        ThreadStates {
            tid,
            life_ns: 1_000_000_000,
            ns,
            samples: 1000,
            sites: vec![StateSite {
                category,
                frames: vec![
                    frame(Some(function), None, ""),
                    frame(Some("simulate"), Some(("sim.c", 12)), ""),
                ],
                user: 1,
                samples,
                ns: (share * 1e9) as u64,
                ..StateSite::default()
            }],
            ..ThreadStates::default()
        }
    };
    let summary_thread = |tid| ThreadSummary {
        tid,
        wall_ns: 1_000_000_000,
        ..ThreadSummary::default()
    };
    Analysis {
        summary: Summary {
            command: vec!["./sim".into()],
            threads: vec![summary_thread(1), summary_thread(2)],
            ..Summary::default()
        },
        states: Some(StateReport {
            threads: vec![thread(1), thread(2)],
            ..StateReport::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn glibc_lock_thresholds_and_naming() {
    let r = rule("glibc-lock-contention");
    check_levels(r, |share| {
        severity(&internal_locks(
            r,
            &sampled(Category::Lock, "random", share, 100),
        ))
    });
    let f = &internal_locks(r, &sampled(Category::Lock, "random", 0.5, 100))[0];
    assert!(f.title.contains("random"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("simulate at sim.c:12")),
        "{f:?}"
    );
}

#[test]
fn glibc_lock_says_which_lock_the_samples_caught() {
    let r = rule("glibc-lock-contention");
    let mut a = sampled(Category::Lock, "random", 0.5, 100);
    let f = &internal_locks(r, &a)[0];
    assert!(
        f.title.contains("Contention on a lock inside"),
        "{}",
        f.title
    );
    for t in &mut a.states.as_mut().unwrap().threads {
        t.sites[0].locks = vec![WaitedLock {
            object: 0x7f00_0000_073c,
            samples: 30,
            ns: 1,
            name: "random()'s lock".into(),
            how: "symbol",
        }];
    }
    let f = &internal_locks(r, &a)[0];
    assert!(
        f.title.contains("Contention on random()'s lock inside"),
        "{}",
        f.title
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("(60 of 200 samples): random()'s lock (60 samples)")),
        "{f:?}"
    );
}

#[test]
fn glibc_lock_leaves_pthread_locks_and_thin_samples_alone() {
    let r = rule("glibc-lock-contention");
    let pthread = sampled(Category::Lock, "pthread_mutex_lock", 0.9, 100);
    assert!(internal_locks(r, &pthread).is_empty());
    // Both threads together stay under the minimum number of samples.
    let thin = (r.param("min_samples") as u64 - 1) / 2;
    assert!(internal_locks(r, &sampled(Category::Lock, "random", 0.9, thin)).is_empty());
    let no_sites = Analysis {
        states: Some(StateReport {
            threads: vec![ThreadStates {
                tid: 1,
                ..ThreadStates::default()
            }],
            ..StateReport::default()
        }),
        ..Analysis::default()
    };
    assert!(internal_locks(r, &no_sites).is_empty());
}

#[test]
fn atomic_thresholds() {
    let r = rule("atomic-contention");
    check_levels(r, |share| {
        severity(&atomics(
            r,
            &sampled(Category::Atomic, "__aarch64_ldadd8_acq_rel", share, 100),
        ))
    });
}

/// Without libc's debug file, one lock waited on from two static functions of libc (shown as
/// `libc.so.6+0x...`) is one finding, its share counted once per thread, and it says which package
/// would name the lock.
#[test]
fn unnamed_libc_functions_are_one_finding_that_says_what_would_name_them() {
    let r = rule("glibc-lock-contention");
    let mut a = sampled(Category::Lock, "x", 0.4, 100);
    let libc = "/lib/x86_64-linux-gnu/libc.so.6";
    for t in &mut a.states.as_mut().unwrap().threads {
        let lock = WaitedLock {
            object: 0x7f00_0000_0700,
            samples: 50,
            ns: 1,
            name: "the lock at 0x7f0000000700 in libc.so.6".into(),
            how: "libc-address",
        };
        let mut second = t.sites[0].clone();
        for (site, offset) in [(&mut t.sites[0], 0xc547b), (&mut second, 0xc5a10)] {
            site.frames[0] = crate::symbols::Frame {
                offset,
                ..frame(None, None, libc)
            };
            site.ns /= 2;
            site.samples /= 2;
            site.locks = vec![lock.clone()];
        }
        t.sites.push(second);
    }
    let found = internal_locks(r, &a);
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = &found[0];
    assert!(
        f.title.contains("40.0%"),
        "counted once per thread: {}",
        f.title
    );
    assert!(
        f.evidence.iter().any(|e| e.contains("libc6-dbg")),
        "{:?}",
        f.evidence
    );
}

/// `locked`, with wait-for edges: each of the two threads waited half the time for the other,
/// which spent its sampled time inside the waits as `holder` says (category, ns, in an I/O call).
fn locked_with_holder(wait_ns: f64, holder: &[(Category, u64, bool)]) -> Analysis {
    use crate::analysis::waitfor::{Activity, Edge, WaitFor};
    use crate::profile::samples::WaitKind;
    let mut a = locked(wait_ns);
    a.profile.threads = (1..=3)
        .map(|tid| crate::profile::ThreadStats::quiet(tid, tid, "bank", 0, 100_000_000))
        .collect();
    let activities: Vec<Activity> = holder
        .iter()
        .map(|&(category, ns, in_io_call)| Activity {
            category,
            function: if category == Category::Compute && !in_io_call {
                "audit".into()
            } else {
                "epoll_wait".into()
            },
            ns,
            in_io_call,
            ..Activity::default()
        })
        .collect();
    let sampled = holder.iter().map(|x| x.1).sum();
    let edges: Vec<Edge> = [(0, 1), (1, 0)]
        .into_iter()
        .map(|(waiter, other)| Edge {
            waiter,
            other: Some(other),
            kind: Some(WaitKind::Lock),
            object: 0x1000,
            waits: 150,
            waits_begun: 150,
            wait_ns: (wait_ns / 2.0) as u64,
            other_sampled_ns: sampled,
            activities: activities.clone(),
            ..Edge::default()
        })
        .collect();
    a.waitfor = Some(WaitFor {
        holders: crate::analysis::waitfor::holder_times(&edges, &Default::default()),
        edges,
        ..WaitFor::default()
    });
    a
}

fn ids(a: &Analysis) -> Vec<String> {
    crate::findings::evaluate(a)
        .into_iter()
        .map(|f| f.id)
        .filter(|id| id.starts_with("lock-"))
        .collect()
}

#[test]
fn a_lock_is_reported_by_what_its_holder_did_while_others_waited() {
    let wait = 100_000_000.0;
    // At work: contention.
    let work = locked_with_holder(
        wait,
        &[(Category::Compute, 9, false), (Category::Blocked, 1, false)],
    );
    assert_eq!(ids(&work), ["lock-contention"]);
    let f = &pthread_locks(rule("lock-contention"), &work)[0];
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("audit (computation) 90.0%")),
        "{f:?}"
    );
    // Asleep (a lock kept while waiting for events): held while asleep, capped at medium.
    let asleep = locked_with_holder(
        wait,
        &[(Category::Compute, 2, false), (Category::Blocked, 8, false)],
    );
    let found = crate::findings::evaluate(&asleep);
    let f = found
        .iter()
        .find(|f| f.id == "lock-held-while-asleep")
        .unwrap_or_else(|| panic!("{found:#?}"));
    assert_eq!(f.severity, Severity::Medium, "{f:?}");
    assert!(f.title.contains("waited in epoll_wait"), "{}", f.title);
    assert!(
        f.evidence
            .iter()
            .any(|e| e.contains("80.0% of their sampled time asleep")),
        "{f:?}"
    );
    assert_eq!(ids(&asleep), ["lock-held-while-asleep"]);
    // In I/O, on a CPU inside the call or off it: held across I/O, and the I/O counted once.
    let io = locked_with_holder(
        wait,
        &[
            (Category::Compute, 3, true),
            (Category::Io, 4, false),
            (Category::Compute, 3, false),
        ],
    );
    assert_eq!(ids(&io), ["lock-held-across-io"]);
    // Half away, half at work: the holder's work is the contention's.
    let half = locked_with_holder(
        wait,
        &[(Category::Compute, 6, false), (Category::Blocked, 4, false)],
    );
    assert_eq!(ids(&half), ["lock-contention"]);
    // Short waits, whose tails (the waiter's wake-up after the release) hold the sleep of a
    // holder that has let go: contention.
    let mut tails = asleep.clone();
    let w = tails.waitfor.as_mut().unwrap();
    for e in &mut w.edges {
        e.waits = e.wait_ns / 50_000;
        e.waits_begun = e.waits;
    }
    w.holders = crate::analysis::waitfor::holder_times(&w.edges, &Default::default());
    assert_eq!(ids(&tails), ["lock-contention"]);
    // Without wait-for edges (no waits recorded): contention, as before.
    assert_eq!(ids(&locked(wait)), ["lock-contention"]);
}

/// A holder that mostly waited for a CPU inside the waits had been preempted with the lock held:
/// the contention stays, at most LOW, and its cause says the waiting follows the CPUs.
#[test]
fn a_lock_whose_holder_was_preempted_is_at_most_low_and_says_so() {
    let wait = 100_000_000.0;
    let r = rule("lock-contention");
    let preempted = locked_with_holder(
        wait,
        &[
            (Category::Runnable, 7, false),
            (Category::Compute, 3, false),
        ],
    );
    let f = &pthread_locks(r, &preempted)[0];
    assert_eq!(f.severity, Severity::Low, "{f:?}");
    assert!(
        f.cause.contains("preempted with the lock held"),
        "{}",
        f.cause
    );
    assert!(f.cause.contains("70.0% of its sampled time"), "{}", f.cause);
    // At work: the severity its share gives, and no such words.
    let work = locked_with_holder(wait, &[(Category::Compute, 9, false)]);
    let f = &pthread_locks(r, &work)[0];
    assert!(f.severity < Severity::Low, "{f:?}");
    assert!(!f.cause.contains("preempted"), "{}", f.cause);
}

/// Each lock is reported once: the contention rules leave a lock exactly where the rules of a
/// holder away from its work take it (the same share, no stricter gates).
#[test]
fn locks_left_by_the_contention_rules_are_taken_by_the_holder_away_rules() {
    let low = |r: &crate::findings::rules::Rule| {
        crate::findings::test_support::levels(r)
            .into_iter()
            .map(|x| x.0)
            .fold(f64::INFINITY, f64::min)
    };
    for contention in ["lock-contention", "runtime-lock-contention"] {
        let c = rule(contention);
        for away in ["lock-held-across-io", "lock-held-while-asleep"] {
            let r = rule(away);
            assert_eq!(
                r.param("min_away_share"),
                c.param("max_holder_away_share"),
                "{away} {contention}"
            );
            assert_eq!(
                r.param("min_mean_wait_ns"),
                c.param("holder_away_min_mean_wait_ns"),
                "{away} {contention}"
            );
            assert!(
                r.param("min_wait_ns") <= c.param("min_wait_ns"),
                "{away} {contention}"
            );
            assert!(low(r) <= low(c), "{away} {contention}");
        }
    }
}

/// `locked_with_holder` at work, with `tail_share` of each edge's waiting after the holder's wake.
fn locked_with_tails(tail_share: f64) -> Analysis {
    let mut a = locked_with_holder(100_000_000.0, &[(Category::Compute, 9, false)]);
    let w = a.waitfor.as_mut().unwrap();
    for e in &mut w.edges {
        e.woken_tail_ns = (e.wait_ns as f64 * tail_share) as u64;
    }
    w.holders = crate::analysis::waitfor::holder_times(&w.edges, &Default::default());
    a
}

#[test]
fn a_lock_whose_waiting_is_mostly_wake_ups_says_its_hand_offs_cost() {
    let r = rule("lock-contention");
    let f = &pthread_locks(r, &locked_with_tails(0.6))[0];
    assert!(
        f.cause
            .contains("60.0% of that waiting was the waiters waking up")
            && f.cause.contains("fewer hand-offs"),
        "{}",
        f.cause
    );
    assert!(
        f.evidence
            .iter()
            .any(|e| e.starts_with("60.0% of the waiting whose waker is known")),
        "{:?}",
        f.evidence
    );
    // Below the rule's share, or no tail known: the cause says nothing of hand-offs.
    for share in [0.1, 0.0] {
        let f = &pthread_locks(r, &locked_with_tails(share))[0];
        assert!(!f.cause.contains("hand-off"), "{share}: {}", f.cause);
    }
}

/// A lock none of whose holds was timed is not said to be held 0 ns (GNU sort's 94 acquisitions
/// against a timing period of 256 read "0 ns held in total"), nor, from one hold timed, a sum
/// that its waiters' waits contradict (GNU sort again: "398.1 µs held in total" beside 288 ms of
/// waiting).
#[test]
fn a_hold_too_few_of_whose_holds_were_timed_is_unknown() {
    use crate::analysis::summary::{LockSummary, MIN_TIMED_HOLDS};
    let lock = |acquisitions, timed_holds, hold_ns| LockSummary {
        acquisitions,
        timed_holds,
        hold_ns,
        ..Default::default()
    };
    let words = |l: LockSummary, period| super::hold_words(&l, period);
    assert_eq!(
        words(lock(10_000, 40, 2_500_000), 256),
        "2.50 ms held in total"
    );
    assert_eq!(
        words(lock(91, 1, 398_100), 256),
        "how long is not known: 1 of its 91 holds was among the 1 in 256 timed"
    );
    assert!(words(lock(94, 0, 0), 256).contains("0 of its 94 holds were"));
    assert!(words(lock(5_000, MIN_TIMED_HOLDS - 1, 7), 256).contains("not known"));
    // Every hold timed: what was measured, 0 included.
    assert_eq!(words(lock(3, 3, 0), 1), "0 ns held in total");
    assert_eq!(words(lock(0, 0, 0), 256), "0 ns held in total");
}

/// A short run leaves few samples: what they show at least is evidence enough (two threads of an
/// 80 ms program waiting 67-85% of their lives on random()'s lock, 13 samples there of 19, had no
/// finding naming the lock); a few samples of a rare wait are not.
#[test]
fn glibc_lock_from_few_samples_counts_by_what_they_show_at_least() {
    let r = rule("glibc-lock-contention");
    let short = |lock_samples: u64, thread_samples: u64| {
        let mut a = sampled(Category::Lock, "random", 0.7, lock_samples);
        for t in &mut a.states.as_mut().unwrap().threads {
            t.samples = thread_samples;
        }
        internal_locks(r, &a)
    };
    let f = short(7, 10);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].title.contains("random"), "{}", f[0].title);
    assert!(short(2, 10).is_empty());
}
