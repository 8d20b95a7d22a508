//! Intel TBB (oneTBB, Debian's libtbb-dev): a contended tbb::spin_mutex is spinning named at the
//! user's line, never page faults (its sched_yield back-off's system time); a balanced
//! parallel_reduce whose workers go idle between rounds stays quiet (issue 23).

mod common;

use common::{TempDir, profile, report_json, test_source};
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

#[test]
fn a_balanced_parallel_reduce_stays_quiet() {
    let r = profile_tbb("balanced_reduce.cpp");
    for id in common::finding_ids(&r) {
        assert!(
            !matches!(
                id.as_str(),
                "spinning"
                    | "page-faults"
                    | "lock-contention"
                    | "runtime-lock-contention"
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
