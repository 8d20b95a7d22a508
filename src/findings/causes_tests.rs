use super::causes::*;
use crate::analysis::Analysis;
use crate::analysis::concurrency::{Concurrency, SerialSection};
use crate::analysis::states::{
    CATEGORY_COUNT, Category, KernelFigures, SampledStack, StateReport, StateSite, ThreadStates,
};
use crate::analysis::summary::{LockSummary, Summary, ThreadSummary};
use crate::findings::test_support::{check_levels, frame, refresh_efficiency, rule};
use crate::findings::{Finding, Severity};

const WALL: u64 = 1_000_000_000;

fn severity(findings: &[Finding]) -> Option<Severity> {
    assert!(findings.len() <= 1, "{findings:?}");
    findings.first().map(|f| f.severity)
}

fn stake(findings: &[Finding]) -> u64 {
    findings[0].stake_ns.expect("a stake")
}

// ---- thread churn ----

/// A main thread that created `threads` short threads (folded into one group) living `life_ns`
/// each, and spent `creation_share` of the wall time in pthread_create by its CPU samples.
fn churn(threads: u32, life_ns: u64, creation_share: f64) -> Analysis {
    let creation = (creation_share * WALL as f64) as u64;
    let marks: Vec<(u64, u64, u32)> = (0..100)
        .map(|i| (i * WALL / 100, creation / 100, 0))
        .chain(std::iter::once((WALL, creation % 100, 0)))
        .collect();
    Analysis {
        summary: Summary {
            command: vec!["./spawner".into()],
            wall_ns: WALL,
            threads: vec![
                ThreadSummary {
                    tid: 1,
                    main: true,
                    wall_ns: WALL,
                    ..ThreadSummary::default()
                },
                ThreadSummary {
                    tid: 0,
                    wall_ns: life_ns * threads as u64,
                    // Threads on a CPU their whole lives: no time starting or ending.
                    cpu_ns: life_ns * threads as u64,
                    folded: Some(threads),
                    ..ThreadSummary::default()
                },
            ],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus: 2,
            stacks: vec![SampledStack {
                category: Category::Compute,
                frames: vec![
                    frame(
                        Some("__pthread_create_2_1"),
                        None,
                        "/lib/x86_64-linux-gnu/libc.so.6",
                    ),
                    frame(Some("spawn_tasks"), Some(("spawn.c", 23)), "/bin/spawner"),
                ],
                on_cpu: true,
                in_io_call: false,
            }],
            threads: vec![ThreadStates {
                tid: 1,
                main: true,
                life_ns: WALL,
                cpu_marks: marks,
                ..ThreadStates::default()
            }],
            ..StateReport::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn thread_churn_thresholds_on_the_creation_time() {
    let r = rule("thread-churn");
    check_levels(r, |share| {
        severity(&thread_churn(r, &churn(40_000, 20_000, share)))
    });
    let f = &thread_churn(r, &churn(40_000, 20_000, 0.4));
    assert_eq!(stake(f), 400_000_000);
    let f = &f[0];
    assert!(f.title.contains("40,000 threads"), "{}", f.title);
    assert!(f.title.contains("spawn_tasks at spawn.c:23") || f.title.contains("spawn.c:23"));
    assert!(f.evidence.iter().any(|e| e.contains("a second")), "{f:?}");
    assert!(f.remedy.contains("pool"), "{}", f.remedy);
    assert!(
        f.remedy.contains("stallscope bench --threads"),
        "{}",
        f.remedy
    );
}

#[test]
fn thread_churn_counts_the_short_threads_lives_off_a_cpu() {
    let r = rule("thread-churn");
    // 1% of the wall time in pthread_create: below every level alone.
    assert!(thread_churn(r, &churn(4000, 200_000, 0.01)).is_empty());
    // The same threads on a CPU a quarter of their lives, waiting for a lock another eighth:
    // the rest (5/8 of 0.8 s) is their start and end, shared over the 2 CPUs.
    let mut a = churn(4000, 200_000, 0.01);
    let group = &mut a.summary.threads[1];
    group.cpu_ns = group.wall_ns / 4;
    group.lock_wait_ns = group.wall_ns / 8;
    let f = thread_churn(r, &a);
    assert_eq!(severity(&f), Some(Severity::High), "{f:?}");
    assert_eq!(stake(&f), 10_000_000 + 250_000_000);
    assert!(
        f[0].evidence.iter().any(|e| e.contains("neither on a CPU")),
        "{f:?}"
    );
}

#[test]
fn thread_churn_needs_many_short_threads() {
    let r = rule("thread-churn");
    // The fixture has 2 CPUs: the gates are per CPU.
    let min = (r.param("min_threads_per_cpu") * 2.0) as u32;
    assert!(thread_churn(r, &churn(min - 1, 20_000, 0.4)).is_empty());
    assert!(!thread_churn(r, &churn(min, 20_000, 0.4)).is_empty());
    // Long-lived threads amortize their creation.
    let long = r.param("max_mean_life_ns") as u64;
    assert!(thread_churn(r, &churn(5000, long + 1000, 0.4)).is_empty());
    // Many threads but few per second (a long run) are no churn.
    let mut slow = churn(min, 20_000, 0.4);
    slow.summary.wall_ns = WALL * 10;
    assert!(thread_churn(r, &slow).is_empty());
    // Without states nothing is said.
    let mut bare = churn(5000, 20_000, 0.4);
    bare.states = None;
    assert!(thread_churn(r, &bare).is_empty());
}

// ---- mostly serial ----

fn worker(tid: u32, cpu: u64) -> ThreadStates {
    ThreadStates {
        tid,
        name: "w".into(),
        life_ns: cpu,
        kernel: Some(KernelFigures {
            exec_ns: cpu,
            ..KernelFigures::default()
        }),
        ..ThreadStates::default()
    }
}

/// Main runs alone for `lone_ns`; `workers` threads ran `worker_cpu` each.
fn serial(lone_ns: u64, workers: u32, worker_cpu: u64, cpus: u32) -> Analysis {
    let marks: Vec<(u64, u64, u32)> = (0..100)
        .map(|i| {
            (
                i * lone_ns / 100,
                lone_ns / 100 + if i == 0 { lone_ns % 100 } else { 0 },
                0,
            )
        })
        .collect();
    let mut threads = vec![ThreadStates {
        tid: 1,
        main: true,
        life_ns: WALL,
        cpu_marks: marks,
        kernel: Some(KernelFigures {
            exec_ns: lone_ns,
            ..KernelFigures::default()
        }),
        ..ThreadStates::default()
    }];
    threads.extend((0..workers).map(|i| worker(10 + i, worker_cpu)));
    Analysis {
        summary: Summary {
            command: vec!["./prep".into()],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus,
            threads,
            stacks: vec![SampledStack {
                category: Category::Compute,
                frames: vec![frame(Some("prepare"), Some(("prep.c", 30)), "/bin/prep")],
                on_cpu: true,
                in_io_call: false,
            }],
            ..StateReport::default()
        }),
        concurrency: Some(Concurrency {
            cpus,
            bin_ns: 10_000_000,
            lone: vec![SerialSection {
                begin_ns: 0,
                end_ns: lone_ns,
                thread: Some(0),
                user_frame: Some(frame(Some("prepare"), Some(("prep.c", 30)), "/bin/prep")),
            }],
            ..Concurrency::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn mostly_serial_thresholds_on_the_serial_work() {
    let r = rule("mostly-serial");
    // Two workers of 2 ms each; the stake is half the serial thread's CPU time on 2 CPUs.
    let at = |share: f64| serial((share * 2.0 * WALL as f64) as u64, 2, 2_000_000, 2);
    check_levels(r, |share| severity(&mostly_serial(r, &at(share))));
    let f = mostly_serial(r, &at(0.4));
    assert!(stake(&f).abs_diff(400_000_000) < 1000, "{f:?}");
    let f = &f[0];
    assert!(f.title.contains("thread unnamed [1] (main)"), "{}", f.title);
    assert!(f.title.contains("prepare (prep.c:30)"), "{}", f.title);
    assert!(
        f.remedy
            .contains("stallscope bench --threads 1,2,4 './prep --threads {threads}'"),
        "{}",
        f.remedy
    );
}

#[test]
fn mostly_serial_needs_workers_and_a_long_serial_part() {
    let r = rule("mostly-serial");
    let min = r.param("min_serial_ns") as u64;
    let cpu = r.param("min_worker_cpu_ns") as u64;
    assert!(!mostly_serial(r, &serial(900_000_000, 2, cpu, 2)).is_empty());
    // One worker: the user asked for one thread besides main.
    assert!(mostly_serial(r, &serial(900_000_000, 1, cpu, 2)).is_empty());
    // Workers that never computed (an idle pool, a helper).
    assert!(mostly_serial(r, &serial(900_000_000, 4, cpu - 1, 2)).is_empty());
    // A short serial part, one CPU.
    assert!(mostly_serial(r, &serial(min - 1, 2, cpu, 2)).is_empty());
    assert!(mostly_serial(r, &serial(900_000_000, 2, cpu, 1)).is_empty());
    // No lone stretch (a run with serial sections instead, or none at all).
    let mut a = serial(900_000_000, 2, cpu, 2);
    a.concurrency.as_mut().unwrap().lone.clear();
    assert!(mostly_serial(r, &a).is_empty());
}

// ---- read-side rwlock contention ----

/// `threads` threads of 1 s each with `share` of their time in `function` over `samples`
/// samples each; the read lock waited `wait_ns` in all.
fn readers(threads: u32, function: &str, share: f64, samples: u64, wait_ns: u64) -> Analysis {
    let thread = |tid: u32| {
        let mut ns = [0u64; CATEGORY_COUNT];
        ns[Category::Compute.index()] = ((1.0 - share) * 1e9) as u64;
        ns[Category::Lock.index()] = (share * 1e9) as u64;
        ThreadStates {
            tid,
            life_ns: WALL,
            ns,
            samples: 1000,
            sites: vec![StateSite {
                category: Category::Lock,
                frames: vec![
                    frame(Some(function), None, "/lib/x86_64-linux-gnu/libc.so.6"),
                    frame(Some("lookup"), Some(("table.c", 22)), "/bin/table"),
                ],
                user: 1,
                samples,
                ns: (share * 1e9) as u64,
                ..StateSite::default()
            }],
            ..ThreadStates::default()
        }
    };
    Analysis {
        summary: Summary {
            command: vec!["./table".into()],
            locks: vec![LockSummary {
                address: 0x4000,
                kind: "rwlock-read",
                acquisitions: 12_000_000,
                wait_ns,
                threads: threads as usize,
                ..LockSummary::default()
            }],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus: 2,
            threads: (1..=threads).map(thread).collect(),
            ..StateReport::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn rwlock_reader_count_thresholds_and_naming() {
    let r = rule("rwlock-reader-count");
    check_levels(r, |share| {
        severity(&rwlock_readers(
            r,
            &readers(2, "__pthread_rwlock_rdlock", share, 100, 0),
        ))
    });
    let f = rwlock_readers(r, &readers(2, "pthread_rwlock_unlock", 0.8, 100, 0));
    // 1.6 s in the read side over 2 CPUs: 0.8 s of the 1 s wall.
    assert_eq!(stake(&f), 800_000_000);
    let f = &f[0];
    assert!(f.title.contains("reader count"), "{}", f.title);
    assert!(f.title.contains("not lock waits"), "{}", f.title);
    assert!(f.title.contains("lookup (table.c:22)"), "{}", f.title);
    assert!(f.title.contains("0x4000"), "{}", f.title);
    assert!(
        f.evidence.iter().any(|e| e.contains("0 contended")),
        "{f:?}"
    );
}

#[test]
fn rwlock_reader_count_is_not_waiting_and_needs_two_threads() {
    let r = rule("rwlock-reader-count");
    let max_wait = r.param("max_wait_share");
    // 1.6 s in the read side: waits above max_wait_share of it are real contention.
    let limit = (max_wait * 1.6e9) as u64;
    assert!(!rwlock_readers(r, &readers(2, "pthread_rwlock_rdlock", 0.8, 100, limit)).is_empty());
    assert!(
        rwlock_readers(
            r,
            &readers(2, "pthread_rwlock_rdlock", 0.8, 100, limit + 1_000_000)
        )
        .is_empty()
    );
    assert!(rwlock_readers(r, &readers(1, "pthread_rwlock_rdlock", 0.8, 100, 0)).is_empty());
    // Few samples, another function, no read lock in the summary.
    let min = r.param("min_samples") as u64;
    assert!(
        rwlock_readers(r, &readers(2, "pthread_rwlock_rdlock", 0.8, min / 2 - 1, 0)).is_empty()
    );
    assert!(rwlock_readers(r, &readers(2, "pthread_mutex_lock", 0.8, 100, 0)).is_empty());
    let mut a = readers(2, "pthread_rwlock_rdlock", 0.8, 100, 0);
    a.summary.locks[0].kind = "mutex";
    assert!(rwlock_readers(r, &a).is_empty());
}

// ---- wake-up storms ----

/// `waiters` threads woken together by each of `broadcasts` broadcasts from thread 1 on one
/// condition variable; after each, all but `useful` of them wait again without releasing the
/// mutex. The broadcasting thread spent `notify_ns` inside pthread_cond_broadcast (CPU samples)
/// and `lock_ns` waiting for locks.
fn storm(waiters: u32, useful: u32, broadcasts: u64, notify_ns: u64, lock_ns: u64) -> Analysis {
    use crate::profile::samples::{Notification, Wait, WaitKind};
    let mut waits = Vec::new();
    for b in 0..broadcasts {
        for w in 0..waiters {
            let start = b * 1000;
            waits.push(Wait {
                serial: 10 + w,
                start_mono_ns: start,
                end_mono_ns: start + 900,
                object: 0x6000,
                other_tid: Some(1),
                kind: WaitKind::Condition,
                lock_kind: None,
                notification: Some(Notification {
                    seq: (b % 0x3fff + 1) as u16,
                    broadcast: true,
                }),
                // This wait follows the previous wake-up: futile for all but the first `useful`.
                rewait: b > 0 && w >= useful,
                woken_before_end_ns: None,
            });
        }
    }
    let profile = crate::profile::Profile {
        waits,
        ..Default::default()
    };
    let mut producer_ns = [0u64; CATEGORY_COUNT];
    producer_ns[Category::Lock.index()] = lock_ns;
    let mut threads = vec![ThreadStates {
        serial: 1,
        tid: 1,
        main: true,
        life_ns: WALL,
        ns: producer_ns,
        cpu_marks: vec![(WALL / 2, notify_ns, 0)],
        ..ThreadStates::default()
    }];
    threads.extend((0..waiters).map(|w| ThreadStates {
        serial: 10 + w,
        tid: 10 + w,
        life_ns: WALL,
        ..ThreadStates::default()
    }));
    Analysis {
        profile,
        summary: Summary {
            command: vec!["./queue".into()],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus: 2,
            threads,
            stacks: vec![SampledStack {
                category: Category::Compute,
                frames: vec![
                    frame(
                        Some("___pthread_cond_broadcast"),
                        None,
                        "/lib/x86_64-linux-gnu/libc.so.6",
                    ),
                    frame(Some("put_item"), Some(("queue.cpp", 39)), "/bin/queue"),
                ],
                on_cpu: true,
                in_io_call: false,
            }],
            ..StateReport::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn wakeup_storm_counts_wakeups_per_useful_one() {
    let r = rule("wakeup-storm");
    let f = wakeup_storm(r, &storm(16, 1, 1000, 300_000_000, 100_000_000));
    assert_eq!(f.len(), 1, "{f:?}");
    let f = &f[0];
    // 16,000 wake-ups, 15 of 16 futile after the first broadcast: about 16 per useful one.
    assert!(f.title.contains("wake 16 threads"), "{}", f.title);
    assert!(f.title.contains("15.8 wake-ups per one"), "{}", f.title);
    assert!(
        f.title.contains("put_item at queue.cpp:39") || f.title.contains("put_item (queue.cpp:39)")
    );
    assert!(f.title.contains("0x6000"), "{}", f.title);
    assert!(f.remedy.contains("notify_one"), "{}", f.remedy);
    // The stake: the futile share of the broadcaster's 400 ms.
    let stake = f.stake_ns.unwrap();
    assert!((370_000_000..=400_000_000).contains(&stake), "{stake}");
}

#[test]
fn wakeup_storm_thresholds_on_the_broadcasters_time() {
    let r = rule("wakeup-storm");
    // All futile but the one per broadcast: the share is 15/16 of the broadcaster's time.
    check_levels(r, |share| {
        let ns = (share * WALL as f64 * 16.0 / 15.0) as u64;
        severity(&wakeup_storm(r, &storm(16, 1, 1000, ns, 0)))
    });
}

#[test]
fn wakeup_storm_is_quiet_when_the_woken_find_work() {
    let r = rule("wakeup-storm");
    let busy = (300_000_000, 100_000_000);
    // A broadcast that wakes threads which all find work (a barrier, shutdown).
    assert!(wakeup_storm(r, &storm(16, 16, 1000, busy.0, busy.1)).is_empty());
    // Half of them: 2 wake-ups per useful one is where it starts.
    let per_useful = r.param("min_per_useful");
    assert!(per_useful >= 2.0);
    assert!(wakeup_storm(r, &storm(16, 9, 1000, busy.0, busy.1)).is_empty());
    // One waiter per broadcast (notify_one in effect), too few wake-ups.
    assert!(wakeup_storm(r, &storm(1, 0, 5000, busy.0, busy.1)).is_empty());
    assert!(wakeup_storm(r, &storm(16, 1, 10, busy.0, busy.1)).is_empty());
    // Without notifications recorded (older profiles): nothing.
    let mut old = storm(16, 1, 1000, busy.0, busy.1);
    for w in &mut old.profile.waits {
        w.notification = None;
        w.rewait = false;
    }
    assert!(wakeup_storm(r, &old).is_empty());
}

#[test]
fn parallel_efficiency_names_the_reader_count_not_lock_waits() {
    let r = rule("parallel-efficiency");
    let mut a = readers(2, "pthread_rwlock_rdlock", 0.8, 100, 0);
    a.states.as_mut().unwrap().peak_threads = 2;
    refresh_efficiency(&mut a);
    let f = super::efficiency::parallel_efficiency(r, &a);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].title.contains("reader count"), "{}", f[0].title);
    assert!(!f[0].title.contains("is lock waits"), "{}", f[0].title);
    // Readers that waited for writers: lock waits they are.
    let waited = readers(2, "pthread_rwlock_rdlock", 0.8, 100, 1_000_000_000);
    let mut waited = waited;
    waited.states.as_mut().unwrap().peak_threads = 2;
    refresh_efficiency(&mut waited);
    let f = super::efficiency::parallel_efficiency(r, &waited);
    assert!(f[0].title.contains("is lock waits"), "{}", f[0].title);
}

// ---- threads taking turns ----

/// Threads 1..=n (indexes 1..=n; index 0 is main) that wake one another `waits` times on a
/// condition variable, each on a CPU `exec_share` of a 1 s span and runnable `delay_share`.
fn turning(n: usize, waits: u64, exec_share: f64, delay_share: f64) -> Analysis {
    turning_for(WALL, n, waits, exec_share, delay_share)
}

/// The same, the threads living `life` of the 1 s run.
fn turning_for(life: u64, n: usize, waits: u64, exec_share: f64, delay_share: f64) -> Analysis {
    use crate::analysis::waitfor::{Edge, WaitFor};
    use crate::profile::samples::WaitKind;
    let member = |tid: u32| ThreadStates {
        serial: tid,
        tid,
        name: "w".into(),
        life_ns: life,
        kernel: Some(KernelFigures {
            exec_ns: (exec_share * life as f64) as u64,
            run_delay_ns: (delay_share * life as f64) as u64,
            ..KernelFigures::default()
        }),
        ..ThreadStates::default()
    };
    let mut threads = vec![ThreadStates {
        tid: 100,
        main: true,
        life_ns: WALL,
        kernel: Some(KernelFigures::default()),
        ..ThreadStates::default()
    }];
    threads.extend((1..=n as u32).map(member));
    // A ring: each waits for the one before it.
    let edges = (1..=n)
        .map(|i| Edge {
            waiter: i,
            other: Some(if i == 1 { n } else { i - 1 }),
            kind: Some(WaitKind::Condition),
            object: 0x7000,
            waits: waits / n as u64,
            waits_begun: waits / n as u64,
            wait_ns: 1_000_000,
            ..Edge::default()
        })
        .collect();
    // The profile's records, which the wait-for edges index, joined to the states by serial.
    let records = threads
        .iter()
        .map(|t| crate::profile::ThreadStats::quiet(t.serial, t.tid, &t.name, 0, t.life_ns))
        .collect();
    Analysis {
        profile: crate::profile::Profile {
            threads: records,
            ..crate::profile::Profile::default()
        },
        summary: Summary {
            command: vec!["./turns".into()],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus: 2,
            threads,
            ..StateReport::default()
        }),
        waitfor: Some(WaitFor {
            edges,
            ..WaitFor::default()
        }),
        ..Analysis::default()
    }
}

#[test]
fn taking_turns_when_threads_wake_one_another_and_want_one_cpu() {
    let r = rule("taking-turns");
    let f = taking_turns(r, &turning(2, 100, 0.5, 0.0));
    assert_eq!(f.len(), 1, "{f:?}");
    // 2 threads wanting 1 CPU for 1 s on 2 CPUs: half the span.
    assert_eq!(f[0].stake_ns, Some(WALL / 2));
    assert!(
        f[0].title.contains("only one of 2 threads"),
        "{}",
        f[0].title
    );
    assert!(f[0].title.contains("0x7000"), "{}", f[0].title);
    assert!(
        f[0].remedy
            .contains("stallscope bench --threads 1,2,4 './turns --threads {threads}'")
    );
    // Four threads on 2 CPUs: the same.
    let f = taking_turns(r, &turning(4, 100, 0.25, 0.0));
    assert_eq!(f[0].stake_ns, Some(WALL / 2));
    // The concurrency gate, with run-queue waits counted as wanting a CPU.
    let max = r.param("max_concurrency");
    assert!(!taking_turns(r, &turning(2, 100, 0.5, max / 2.0 - 0.5 - 0.01)).is_empty());
    assert!(taking_turns(r, &turning(2, 100, 0.5, max / 2.0 - 0.5 + 0.01)).is_empty());
}

#[test]
fn taking_turns_thresholds_on_the_stake() {
    let r = rule("taking-turns");
    // 2 threads taking turns for `life` of the run: the stake is half of it.
    check_levels(r, |share| {
        let life = (2.0 * share * WALL as f64) as u64;
        severity(&taking_turns(r, &turning_for(life, 2, 100, 0.5, 0.0)))
    });
}

#[test]
fn taking_turns_needs_mutual_waits_and_working_threads() {
    let r = rule("taking-turns");
    let min = r.param("min_waits") as u64;
    assert!(taking_turns(r, &turning(2, min - 2, 0.5, 0.0)).is_empty());
    assert!(!taking_turns(r, &turning(2, min, 0.5, 0.0)).is_empty());
    // Members that hardly run (a pool waiting for work).
    let share = r.param("min_member_cpu_share");
    assert!(taking_turns(r, &turning(2, 100, share * 0.9, 0.0)).is_empty());
    // One-way waits (consumers waiting for a producer) are no turns.
    let mut a = turning(2, 100, 0.5, 0.0);
    a.waitfor.as_mut().unwrap().edges.truncate(1);
    assert!(taking_turns(r, &a).is_empty());
    // pthread mutexes are lock-contention's.
    let mut a = turning(2, 100, 0.5, 0.0);
    for e in &mut a.waitfor.as_mut().unwrap().edges {
        e.kind = Some(crate::profile::samples::WaitKind::Lock);
    }
    assert!(taking_turns(r, &a).is_empty());
    // One CPU: nothing to gain.
    let mut a = turning(2, 100, 0.5, 0.0);
    a.states.as_mut().unwrap().cpus = 1;
    assert!(taking_turns(r, &a).is_empty());
}

/// Four threads on CPython's GIL beside two CPU hogs (python threads, 2 CPUs): the waiters woke
/// every 5 ms to look at the GIL and each look waited for a CPU the hogs held, so together they
/// wanted 1.31 CPUs and read as serial sections instead.
fn turning_behind_load(n: usize, exec: f64, delay: f64, own: u64, others: u64) -> Analysis {
    let mut a = turning(n, 100, exec, delay);
    a.concurrency = Some(Concurrency {
        cpus: 2,
        bin_ns: 10_000_000,
        own_runnable_ns: own,
        other_runnable_ns: others,
        ..Concurrency::default()
    });
    a
}

#[test]
fn taking_turns_behind_other_load_leaves_out_the_waits_others_caused() {
    let r = rule("taking-turns");
    // 0.8 CPUs on a CPU and 0.52 runnable: 1.32 wanted, over the gate.
    assert!(taking_turns(r, &turning(4, 100, 0.2, 0.13)).is_empty());
    // The program's own waits (more threads wanting a CPU than there are) count.
    assert!(taking_turns(r, &turning_behind_load(4, 0.2, 0.13, 520_000_000, 0)).is_empty());
    // Waits for CPUs that other processes held do not.
    let f = taking_turns(r, &turning_behind_load(4, 0.2, 0.13, 0, 520_000_000));
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].title.contains("(0.80 CPUs wanted)"), "{}", f[0].title);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("; 1.32 with the waits for CPUs that other processes held")),
        "{:?}",
        f[0].evidence
    );
    // The stake keeps those waits (such load would not leave them): 1 s - 1.32 s / 2.
    assert_eq!(f[0].stake_ns, Some(WALL - 660_000_000));
    // Two threads side by side, starved by other load (each on a CPU half the time and
    // runnable the other half) wanted both CPUs: no turns, however little they ran.
    assert!(taking_turns(r, &turning_behind_load(2, 0.5, 0.5, 0, WALL)).is_empty());
    let margin = r.param("side_by_side_margin");
    // On a CPU 1.0 together, and runnable 2d: the gate is 1 + 2d against 2 CPUs less the margin.
    let runnable = |d: f64| turning_behind_load(2, 0.5, d, 0, WALL);
    let d = (2.0 - margin - 1.0) / 2.0;
    assert!(!taking_turns(r, &runnable(d - 0.005)).is_empty());
    assert!(taking_turns(r, &runnable(d + 0.005)).is_empty());
}

/// The turns of threads taking turns are not serial sections of one of them.
#[test]
fn serial_sections_of_threads_taking_turns_are_left_to_taking_turns() {
    let serial = rule("serial-section");
    let sections = |a: &mut Analysis, thread: usize| {
        let c = a.concurrency.as_mut().unwrap();
        c.serial = vec![SerialSection {
            begin_ns: 100_000_000,
            end_ns: 700_000_000,
            thread: Some(thread),
            user_frame: None,
        }];
        c.parallel_ns = 200_000_000;
        // One thread on a CPU throughout.
        c.running_unsmoothed = vec![1.0; 100];
    };
    // A member (states index 1) is the one running in them.
    let mut a = turning_behind_load(4, 0.2, 0.13, 0, 520_000_000);
    sections(&mut a, 1);
    assert!(!taking_turns(rule("taking-turns"), &a).is_empty());
    assert!(crate::findings::scaling::serial_section(serial, &a).is_empty());
    // The main thread (index 0), no member, that hardly ran: the program never ran in
    // parallel but for the turn-takers' waits for a CPU (python's start and end beside hogs).
    sections(&mut a, 0);
    assert!(crate::findings::scaling::serial_section(serial, &a).is_empty());
    // A main thread that works beside them: its stretch alone is a serial section.
    let main = &mut a.states.as_mut().unwrap().threads[0];
    main.kernel.as_mut().unwrap().exec_ns = 300_000_000;
    assert_eq!(
        crate::findings::scaling::serial_section(serial, &a).len(),
        1
    );
    // No turns (the waits were the program's own): a serial section too.
    let mut a = turning_behind_load(4, 0.2, 0.13, 520_000_000, 0);
    sections(&mut a, 1);
    assert_eq!(
        crate::findings::scaling::serial_section(serial, &a).len(),
        1
    );
    // Its stake is its time on a CPU: behind other load, waiting for a CPU half of it, half.
    let stake = |a: &Analysis| crate::findings::scaling::serial_section(serial, a)[0].stake_ns;
    assert_eq!(stake(&a), Some(300_000_000));
    a.concurrency.as_mut().unwrap().running_unsmoothed = vec![0.5; 100];
    assert_eq!(stake(&a), Some(150_000_000));
}

/// Four siblings on 2 CPUs; two finished at 400 ms, the other two ran on to 1 s. While the early
/// two idled the program wanted `wanting` CPUs.
fn imbalanced(wanting: f64) -> Analysis {
    use crate::analysis::concurrency::{Bin, Imbalance};
    let bins = (0..100)
        .map(|i| Bin {
            running: if i < 40 { 2.0 } else { wanting.min(2.0) },
            runnable: 0.0,
            alive: if i < 40 { 4.0 } else { 2.0 },
            lock_waiting: 0.0,
        })
        .collect();
    Analysis {
        summary: Summary {
            command: vec!["./mixed".into()],
            ..Summary::default()
        },
        states: Some(StateReport {
            wall_ns: WALL,
            cpus: 2,
            threads: (0..4).map(|i| worker(10 + i, 500_000_000)).collect(),
            ..StateReport::default()
        }),
        concurrency: Some(Concurrency {
            cpus: 2,
            bin_ns: 10_000_000,
            bins,
            imbalance: Some(Imbalance {
                members: vec![0, 1, 2, 3],
                start_ns: 0,
                ideal_end_ns: 700_000_000,
                finish_ns: vec![400_000_000, 400_000_000, WALL, WALL],
                last_end_ns: WALL,
                lagging: 2,
                user_frame: None,
                idle_ns: 1_200_000_000,
                lagging_exec_ns: 900_000_000,
                others_exec_ns: 500_000_000,
            }),
            ..Concurrency::default()
        }),
        ..Analysis::default()
    }
}

/// Siblings that idled while the program's other threads kept the CPUs busy cost nothing: two
/// GIL-bound Python threads and two hashlib threads read MEDIUM load-imbalance, "2 of them
/// finished early and idled 3.083 s" of a 2.514 s run. With a CPU free meanwhile, the even
/// split's saving stands, at most what the free CPU allows; the title's idle is wall time.
#[test]
fn load_imbalance_counts_only_cpus_left_free_while_siblings_idled() {
    let r = rule("load-imbalance");
    assert!(crate::findings::scaling::load_imbalance(r, &imbalanced(2.0)).is_empty());
    let f = crate::findings::scaling::load_imbalance(r, &imbalanced(1.0));
    assert_eq!(f.len(), 1, "{f:?}");
    // 600 ms with one CPU of two free: at most 300 ms saved, under the 300 ms past the even end.
    assert!(stake(&f).abs_diff(300_000_000) < 1_000_000, "{f:?}");
    assert!(
        f[0].title.contains("idled up to 600.00 ms"),
        "{}",
        f[0].title
    );
    for f in &f {
        assert!(f.stake_ns.unwrap_or(0) <= WALL);
    }
}
