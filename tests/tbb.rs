//! Intel TBB (oneTBB, Debian's libtbb-dev): a contended tbb::spin_mutex is spinning named at the
//! user's line, never page faults (its sched_yield back-off's system time); a balanced
//! parallel_reduce whose workers go idle between rounds stays quiet. Through ITT
//! (preload/itt.c: stallscope is the collector TBB loads), mutexes built with
//! TBB_USE_PROFILING_TOOLS are TBB locks named at the user's line, a release build's scheduler
//! notifications are no locks, and a collector the user names is the one loaded.

mod common;

use common::{TempDir, profile, profile_with, report_json, test_source};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn build(dir: &Path, name: &str) -> PathBuf {
    build_with(dir, name, &[])
}

fn build_with(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let exe = dir.join(name.trim_end_matches(".cpp"));
    let out = Command::new("c++")
        .args(["-O2", "-g", "-std=c++17"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(test_source("tbb_programs", name))
        .arg("-ltbb")
        .output()
        .expect("running c++ (Debian package g++)");
    assert!(
        out.status.success(),
        "building {name} (Debian package libtbb-dev):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn profile_tbb(name: &str) -> Value {
    let dir = TempDir::new("tbb");
    let exe = build(&dir, name);
    let (_, prof) = profile(&dir, "tbb.prof", &["-q"], &[exe.to_str().unwrap(), "2"], 0);
    report_json(&prof)
}

#[test]
fn a_contended_spin_mutex_is_spinning_at_the_users_line_not_page_faults() {
    let r = profile_tbb("spin_mutex.cpp");
    assert!(
        !common::finding_ids(&r).contains(&"page-faults".to_string()),
        "sched_yield's system time read as page faults: {:#}",
        r["findings"]
    );
    let spinning = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "spinning");
    match spinning {
        Some(f) => {
            let title = f["title"].as_str().unwrap();
            assert!(
                title.contains("spin_mutex.cpp:"),
                "at the user's line: {title}"
            );
            assert!(!title.contains("libtbb"), "{title}");
        }
        None => {
            if let Some(why) = common::starved(&r, 0.15) {
                eprintln!("SKIPPED: {why}");
                return;
            }
            panic!("no spinning finding: {:#}", r["findings"]);
        }
    }
}

/// The locks TBB reported through ITT (kind itt-sync).
fn itt_locks(r: &Value) -> Vec<&Value> {
    r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "itt-sync")
        .collect()
}

/// The line of `// MARK <name>` in a test program.
fn mark_line(source: &str, name: &str) -> usize {
    let text = std::fs::read_to_string(test_source("tbb_programs", source)).unwrap();
    1 + text
        .lines()
        .position(|l| l.contains(&format!("// MARK {name}")))
        .unwrap()
}

/// itt_mutexes.cpp built with TBB_USE_PROFILING_TOOLS, profiled with `kind` (queuing or mutex).
fn profile_itt_mutex(kind: &str) -> Value {
    let dir = TempDir::new("tbb-itt");
    let exe = build_with(&dir, "itt_mutexes.cpp", &["-DTBB_USE_PROFILING_TOOLS=1"]);
    let (_, prof) = profile(
        &dir,
        "itt.prof",
        &["-q"],
        &[exe.to_str().unwrap(), kind, "2"],
        0,
    );
    report_json(&prof)
}

fn assert_named_tbb_lock(kind: &str, object: &str) {
    let r = profile_itt_mutex(kind);
    let locks = itt_locks(&r);
    let lock = locks
        .iter()
        .max_by_key(|l| l["acquisitions"].as_u64().unwrap_or(0))
        .unwrap_or_else(|| panic!("no lock reported through ITT: {:#}", r["locks"]));
    // Every acquisition of the user's lock, and nothing of the scheduler's.
    assert_eq!(lock["acquisitions"], 30000, "{lock:#}");
    assert_eq!(locks.len(), 1, "{:#}", r["locks"]);
    let text = lock.to_string();
    assert!(text.contains(object) && text.contains("TBB"), "{lock:#}");
    let line = format!("itt_mutexes.cpp:{}", mark_line("itt_mutexes.cpp", kind));
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "runtime-lock-contention");
    match f {
        Some(f) => {
            let title = f["title"].as_str().unwrap();
            assert!(title.contains(object), "in TBB's words: {title}");
            assert!(title.contains(&line), "at the user's line {line}: {title}");
            assert!(!title.contains("libtbb"), "{title}");
            // No share above 100%.
            let share: f64 = title
                .split("waited ")
                .nth(1)
                .and_then(|t| t.split('%').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no share: {title}"));
            assert!(share > 0.0 && share <= 100.0, "{title}");
        }
        None => {
            if let Some(why) = common::starved(&r, 0.15) {
                eprintln!("SKIPPED: {why}");
                return;
            }
            panic!("no runtime-lock-contention: {:#}", r["findings"]);
        }
    }
    for id in common::finding_ids(&r) {
        assert!(
            // Its acquisition's spinning and yielding is that lock's wait, counted once.
            !matches!(
                id.as_str(),
                "page-faults" | "lock-contention" | "spinning" | "glibc-lock-contention"
            ),
            "{id}: {:#}",
            r["findings"]
        );
    }
}

#[test]
fn a_queuing_mutex_built_for_profiling_tools_is_a_tbb_lock_at_the_users_line() {
    assert_named_tbb_lock("queuing", "tbb::queuing_mutex");
}

#[test]
fn a_tbb_mutex_built_for_profiling_tools_is_a_tbb_lock_at_the_users_line() {
    assert_named_tbb_lock("mutex", "tbb::mutex");
}

#[test]
fn a_collector_the_user_names_is_kept() {
    let dir = TempDir::new("tbb-own-itt");
    let collector = dir.join("libown_collector.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&collector)
        .arg(test_source("tbb_programs", "own_collector.c"))
        .output()
        .expect("running cc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = build_with(&dir, "itt_mutexes.cpp", &["-DTBB_USE_PROFILING_TOOLS=1"]);
    let mark = dir.join("loaded");
    let (_, prof) = profile_with(
        &dir,
        "own.prof",
        &["-q"],
        &[exe.to_str().unwrap(), "queuing", "2"],
        0,
        |c| {
            c.env("INTEL_LIBITTNOTIFY64", &collector)
                .env("OWN_COLLECTOR_MARK", &mark);
        },
    );
    assert!(mark.exists(), "the user's collector was not loaded");
    let r = report_json(&prof);
    assert!(itt_locks(&r).is_empty(), "{:#}", r["locks"]);
}

#[test]
fn a_balanced_parallel_reduce_stays_quiet() {
    let r = profile_tbb("balanced_reduce.cpp");
    // A release build's scheduler notifications (task pools taken, no prepare) are no locks.
    assert!(itt_locks(&r).is_empty(), "{:#}", r["locks"]);
    // TBB's worker, asleep in libtbb (stripped: no function names) between the rounds, is the
    // runtime's idle worker, not blocked.
    let workers: Vec<&Value> = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["main"] == false)
        .collect();
    let ns = |key: &str| -> u64 {
        workers
            .iter()
            .map(|t| t["states"][key].as_u64().unwrap_or(0))
            .sum()
    };
    assert!(
        ns("idle_ns") > 0 && ns("blocked_ns") < ns("idle_ns"),
        "TBB's workers: idle {} ns, blocked {} ns",
        ns("idle_ns"),
        ns("blocked_ns")
    );
    // Its algorithms on the timeline (ITT's task notifications): the caller's eight
    // parallel_reduce runs, 20 ms apart, each its own band, inside the process's life.
    let runs = r["omp_runs"].as_array().expect("omp_runs");
    let wall = r["wall_ns"].as_u64().unwrap();
    let main = common::main_thread(&r);
    assert!(!runs.is_empty(), "no band for TBB's algorithms");
    let counted: u64 = runs.iter().map(|x| x["regions"].as_u64().unwrap()).sum();
    assert_eq!(counted, 8, "{runs:#?}");
    for x in runs {
        assert_eq!(x["runtime"], "TBB", "{x:#}");
        assert!(
            x["region"]
                .as_str()
                .unwrap()
                .starts_with("tbb::parallel_reduce in main at balanced_reduce.cpp:"),
            "{x:#}"
        );
        assert_eq!(x["tid"], main["tid"], "bands are the caller's: {x:#}");
        let (b, e) = (
            x["begin_ns"].as_u64().unwrap(),
            x["end_ns"].as_u64().unwrap(),
        );
        assert!(b <= e && e <= wall, "{x:#}");
    }
    for id in common::finding_ids(&r) {
        assert!(
            !matches!(
                id.as_str(),
                "spinning"
                    | "page-faults"
                    | "lock-contention"
                    | "runtime-lock-contention"
                    | "lock-held-while-asleep"
                    | "glibc-lock-contention"
                    | "parallel-efficiency"
            ),
            "a false alarm on a balanced TBB program: {id}: {:#}",
            r["findings"]
        );
    }
}

#[test]
fn std_execution_par_built_without_a_parallel_backend_ran_on_one_thread() {
    let dir = TempDir::new("tbb-par");
    let serial = build_with(
        &dir,
        "par_algorithms.cpp",
        &["-D_GLIBCXX_USE_TBB_PAR_BACKEND=0"],
    );
    let (_, prof) = profile(&dir, "serial.prof", &["-q"], &[serial.to_str().unwrap()], 0);
    let r = report_json(&prof);
    let f = r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "par-ran-serially")
        .unwrap_or_else(|| panic!("no par-ran-serially: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("par_algorithms.cpp:"),
        "at the user's line: {title}"
    );
    assert!(f["stake_ns"].as_u64().unwrap() <= r["wall_ns"].as_u64().unwrap_or(u64::MAX));
    // Built with TBB's headers, the same program runs on TBB: no such finding.
    let dir = TempDir::new("tbb-par-tbb");
    let parallel = build(&dir, "par_algorithms.cpp");
    let (_, prof) = profile(&dir, "tbb.prof", &["-q"], &[parallel.to_str().unwrap()], 0);
    let r = report_json(&prof);
    assert!(
        !common::finding_ids(&r).contains(&"par-ran-serially".to_string()),
        "{:#}",
        r["findings"]
    );
}
