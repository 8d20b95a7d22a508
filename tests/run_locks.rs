//! Lock accounting of `stallscope run`: a pthread mutex that two threads fight over.

mod common;

use common::*;

#[test]
fn contended_mutex_is_found_with_exact_acquisitions_and_real_waits() {
    let dir = TempDir::new("locks");
    let exe = compile(dir.path(), "mutex_fight.c", &[]);
    let (out, path) = profile(dir.path(), "fight.prof", &[], &[&exe], 0);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    // "mutex 0x... iterations 400000"
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 4, "program output: {stdout}");
    let address =
        u64::from_str_radix(words[1].trim_start_matches("0x"), 16).expect("mutex address");
    let iterations: u64 = words[3].parse().expect("iteration count");

    let report = report_json(&path);
    let lock = find_lock(&report, address).unwrap_or_else(|| {
        panic!(
            "mutex {address:#x} is not in the report's locks: {}",
            report["locks"]
        )
    });
    let acquisitions = num(lock, &["acquisitions"]);
    let contended = num(lock, &["contended"]);
    let wait_ns = num(lock, &["wait_ns"]);
    let max_wait_ns = num(lock, &["max_wait_ns"]);
    assert_eq!(
        acquisitions, iterations,
        "every lock is counted once: {lock}"
    );
    // A contended acquisition of a stepped mutex is one that slept (the hook goes on with
    // glibc's own steps, and a lock the exchange takes is not a wait), as the kernel counts
    // futex waits: usually thousands here, 0.36% of acquisitions in a full test run at load, so
    // the bound is 0.1%; the wait time below says the waits were real.
    assert!(
        contended * 1000 > acquisitions,
        "more than 0.1% of acquisitions contended: {lock}"
    );
    assert!(contended <= acquisitions, "{lock}");
    assert!(wait_ns > 1_000_000, "more than 1 ms of total wait: {lock}");
    assert!(
        max_wait_ns > 0 && max_wait_ns <= wait_ns,
        "max wait within the total: {lock}"
    );
    assert!(
        num(lock, &["hold_ns"]) > 0,
        "holds are measured (on a sample): {lock}"
    );
    if let Some(kind) = lock["kind"].as_str() {
        assert!(
            kind.to_lowercase().contains("mutex"),
            "kind of a pthread_mutex_t: {lock}"
        );
    }

    // The waits belong to the two worker threads; their lock_wait_ns covers this lock's wait.
    let threads = report["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 3, "main and two workers: {threads:?}");
    let thread_wait: u64 = threads.iter().map(|t| num(t, &["lock_wait_ns"])).sum();
    assert!(
        thread_wait as f64 >= wait_ns as f64 * 0.99,
        "threads' lock_wait_ns ({thread_wait}) below the lock's wait_ns ({wait_ns})"
    );
    // And this is the most contended lock of the program.
    let max_other = report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| parse_address(&l["address"]) != Some(address))
        .map(|l| num(l, &["wait_ns"]))
        .max()
        .unwrap_or(0);
    assert!(
        max_other <= wait_ns,
        "another lock waited longer: {}",
        report["locks"]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{address:x}")) || stderr.contains("shared"),
        "the run summary names the most contended lock ({address:#x}, symbol `shared`)\n{stderr}"
    );
}

/// Sum of `acquisitions` over the report's entries for one address (an rwlock may be listed once
/// per mode).
fn acquisitions_at(report: &serde_json::Value, address: u64) -> u64 {
    report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| parse_address(&l["address"]) == Some(address))
        .map(|l| num(l, &["acquisitions"]))
        .sum()
}

fn total_acquisitions(report: &serde_json::Value) -> u64 {
    report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| num(l, &["acquisitions"]))
        .sum()
}

#[test]
fn every_lock_kind_and_a_thousand_mutexes_are_counted() {
    let dir = TempDir::new("many-locks");
    let exe = compile(dir.path(), "many_locks.c", &[]);
    let (_, empty) = profile(
        dir.path(),
        "empty.prof",
        &[],
        &[exe.as_os_str(), "empty".as_ref()],
        0,
    );
    let (out, path) = profile(dir.path(), "locks.prof", &[], &[&exe], 0);
    let base = report_json(&empty);
    let report = report_json(&path);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let addr = |i: usize| {
        u64::from_str_radix(words[i].trim_start_matches("0x"), 16)
            .unwrap_or_else(|_| panic!("program output: {stdout}"))
    };
    let (rwlock, spin, first, last) = (addr(1), addr(3), addr(5), addr(6));

    assert_eq!(
        acquisitions_at(&report, rwlock),
        150,
        "rwlock: 100 read + 50 write"
    );
    assert_eq!(
        acquisitions_at(&report, spin),
        70,
        "spinlock: {}",
        report["locks"]
    );
    let kinds = |address: u64| -> Vec<String> {
        report["locks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| parse_address(&l["address"]) == Some(address))
            .map(|l| l["kind"].as_str().unwrap_or_default().to_lowercase())
            .collect()
    };
    assert!(
        kinds(rwlock).iter().all(|k| k.contains("rw")),
        "rwlock kinds: {:?}",
        kinds(rwlock)
    );
    assert!(
        kinds(spin).iter().all(|k| k.contains("spin")),
        "spin kinds: {:?}",
        kinds(spin)
    );
    assert_eq!(acquisitions_at(&report, first), 3, "the first mutex");
    // 1000 mutexes do not all fit in a per-thread table, but every acquisition is counted: the
    // total over all entries (including any overflow entry) is exact.
    assert_eq!(
        total_acquisitions(&report),
        total_acquisitions(&base) + 3 * 1000 + 150 + 70,
        "all lock acquisitions of the program are counted"
    );
    assert!(
        acquisitions_at(&report, last) == 3 || acquisitions_at(&report, last) == 0,
        "the last mutex is either listed exactly or folded into an overflow entry"
    );
    for l in report["locks"].as_array().unwrap() {
        if parse_address(&l["address"]) == Some(0) {
            // The overflow entry mixes locks of every kind: it must not claim one.
            assert_eq!(l["kind"], "other", "the overflow entry: {l}");
        }
        assert_eq!(num(l, &["contended"]), 0, "one thread never waits: {l}");
    }
}

/// Acquisitions by (address, kind): a read-write lock is listed once per mode.
fn acquisitions_of(report: &serde_json::Value, address: u64, kind: &str) -> u64 {
    report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| {
            parse_address(&l["address"]) == Some(address)
                && l["kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_lowercase()
                    .contains(kind)
        })
        .map(|l| num(l, &["acquisitions"]))
        .sum()
}

#[test]
fn contended_rwlock_and_spinlock_are_counted_exactly_by_kind() {
    let dir = TempDir::new("rwlock-fight");
    let exe = compile(dir.path(), "rwlock_fight.c", &[]);
    let (out, path) = profile(dir.path(), "rw.prof", &[], &[&exe], 0);
    let report = report_json(&path);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    // "rwlock ADDRESS spin ADDRESS reads R writes W spins S"
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words.len(), 10, "program output: {stdout}");
    let addr = |i: usize| u64::from_str_radix(words[i].trim_start_matches("0x"), 16).unwrap();
    let count = |i: usize| words[i].parse::<u64>().unwrap();
    let (rwlock, spin) = (addr(1), addr(3));
    let kinds: Vec<String> = report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| parse_address(&l["address"]) == Some(rwlock))
        .map(|l| l["kind"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        acquisitions_of(&report, rwlock, "read"),
        count(5),
        "read acquisitions; entries {kinds:?}: {}",
        report["locks"]
    );
    assert_eq!(
        acquisitions_of(&report, rwlock, "write"),
        count(7),
        "write acquisitions: {}",
        report["locks"]
    );
    assert_eq!(
        acquisitions_at(&report, spin),
        count(9),
        "spin: {}",
        report["locks"]
    );
    for l in report["locks"].as_array().unwrap() {
        assert!(num(l, &["contended"]) <= num(l, &["acquisitions"]), "{l}");
    }
}

/// Lock holds are timed on their own sample (one acquisition in 8 x the timing period), every
/// one with `--timing exact`: then the hold time covers what the program measured inside its
/// critical sections (and little more: the clock reads around them).
#[test]
fn hold_times_cover_what_the_program_held() {
    let dir = TempDir::new("lock-holds");
    let exe = compile_file(dir.path(), &repo_file("benches/programs/lock_holds.c"), &[]);
    // Enough holds (about 6 ms held) that a preemption between a hook's clock read and the
    // program's cannot double the hook's figure.
    let holds = 20000u64;
    let held_by = |out: &std::process::Output| -> u64 {
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // "lock_holds: N holds, T ns held (measured in the program)"
        let words: Vec<&str> = text.split_whitespace().collect();
        words[3]
            .parse()
            .unwrap_or_else(|_| panic!("program output: {text}"))
    };
    let the_lock = |report: &serde_json::Value| -> serde_json::Value {
        let locks = report["locks"].as_array().expect("locks");
        let lock = locks
            .iter()
            .max_by_key(|l| num(l, &["acquisitions"]))
            .unwrap_or_else(|| panic!("no lock: {report}"));
        assert_eq!(num(lock, &["acquisitions"]), holds, "{lock}");
        lock.clone()
    };

    let (out, path) = profile(
        dir.path(),
        "exact.prof",
        &["--timing", "exact"],
        &[exe.to_str().unwrap(), &holds.to_string()],
        0,
    );
    let report = report_json(&path);
    assert_eq!(report["timing"]["lock_period"], 1, "{}", report["timing"]);
    let measured = held_by(&out);
    let hold = num(&the_lock(&report), &["hold_ns"]);
    assert!(
        hold >= measured && hold <= measured * 2,
        "every hold timed: {hold} ns against {measured} ns measured by the program"
    );

    let (out, path) = profile(
        dir.path(),
        "sampled.prof",
        &[],
        &[exe.to_str().unwrap(), &holds.to_string()],
        0,
    );
    let report = report_json(&path);
    assert_eq!(report["timing"]["period"], 256, "{}", report["timing"]);
    assert_eq!(report["timing"]["lock_period"], 256, "{}", report["timing"]);
    assert!(held_by(&out) > 0);
    assert!(
        num(&the_lock(&report), &["hold_ns"]) > 0,
        "about 78 of 20000 holds timed"
    );
}

/// Runs a lock-integrity program (its output: "NAME ADDRESS ..." per lock, then "violations N")
/// with the interposer taking glibc's own lock steps (the default), without them
/// (STALLSCOPE_LOCK_STEPS=0) and with every hold timed (which takes the slow parts); checks that
/// the program found its locks whole, what the profile says of the steps, and returns per run the
/// report and the program's lines split into words.
fn run_integrity(program: &str) -> Vec<(&'static str, serde_json::Value, Vec<Vec<String>>)> {
    let dir = TempDir::new(program.trim_end_matches(".c"));
    let exe = compile(dir.path(), program, &[]);
    let cases: [(&str, &[&str], bool); 3] = [
        ("steps", &[], true),
        ("forwarded", &[], false),
        ("every hold timed", &["--timing", "exact"], true),
    ];
    let mut runs = Vec::new();
    for (name, args, steps) in cases {
        let (out, path) = profile_with(
            dir.path(),
            &format!("{}.prof", name.replace(' ', "-")),
            args,
            &[exe.to_str().unwrap(), "40000", "4"],
            0,
            |cmd| {
                if !steps {
                    cmd.env("STALLSCOPE_LOCK_STEPS", "0");
                }
            },
        );
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            stdout.contains("violations 0"),
            "{program}, {name}: {stdout}"
        );
        let report = report_json(&path);
        assert_eq!(report["lock_steps"]["mutex"], steps, "{name}");
        assert_eq!(report["lock_steps"]["rwlock_read"], steps, "{name}");
        let lines = stdout
            .lines()
            .filter(|l| !l.starts_with("violations"))
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect();
        runs.push((name, report, lines));
    }
    runs
}

/// The interposer does glibc's uncontended read step itself (preload/lock_steps.h): read-write
/// locks of every kind, taken by every call from four threads, must still exclude writers from
/// readers and from each other (the program checks, and exits 1 if not), and every acquisition is
/// counted by kind.
#[test]
fn rwlocks_stay_locks_and_are_counted_exactly_with_glibcs_read_step_in_the_hooks() {
    for (name, report, lines) in run_integrity("rwlock_integrity.c") {
        // "NAME ADDRESS reads R writes W", one line per lock
        assert_eq!(lines.len(), 3, "{name}: {lines:?}");
        for w in lines {
            assert_eq!(w.len(), 6, "{name}: {w:?}");
            let address = parse_address(&serde_json::json!(w[1])).unwrap();
            let (reads, writes): (u64, u64) = (w[3].parse().unwrap(), w[5].parse().unwrap());
            assert!(reads > 10_000 && writes > 1_000, "{name}: {w:?}");
            let locks = &report["locks"];
            assert_eq!(
                acquisitions_of(&report, address, "read"),
                reads,
                "{name}, {w:?}: {locks}"
            );
            assert_eq!(
                acquisitions_of(&report, address, "write"),
                writes,
                "{name}, {w:?}: {locks}"
            );
        }
    }
}

/// The same for mutexes, whose private normal kind the hooks lock and release with glibc's own
/// steps: mutexes from the initializer and of type NORMAL (both stepped: glibc's __kind 0 and
/// 512), recursive, error-checking and adaptive ones, condition waits on the first, every lock
/// call; exclusion, no lost update, EPERM where glibc gives it, exact counts.
#[test]
fn mutexes_stay_mutexes_and_are_counted_exactly_with_glibcs_steps_in_the_hooks() {
    for (name, report, lines) in run_integrity("mutex_integrity.c") {
        // "NAME ADDRESS acquisitions N kind K", one line per mutex
        assert_eq!(lines.len(), 5, "{name}: {lines:?}");
        let kinds: Vec<&str> = lines.iter().map(|w| w[5].as_str()).collect();
        assert!(
            kinds.contains(&"0") && kinds.contains(&"512"),
            "both kinds the steps take are run: {kinds:?}"
        );
        for w in lines {
            assert_eq!(w.len(), 6, "{name}: {w:?}");
            let address = parse_address(&serde_json::json!(w[1])).unwrap();
            let acquisitions: u64 = w[3].parse().unwrap();
            assert!(acquisitions > 10_000, "{name}: {w:?}");
            assert_eq!(
                acquisitions_at(&report, address),
                acquisitions,
                "{name}, {w:?}: {}",
                report["locks"]
            );
        }
    }
}
