//! OpenMP programs built with GCC (libgomp: no OMPT, futex waits by an inline system call):
//! an imbalanced static loop is load imbalance at its region's barrier, never a lock inside the
//! C library; a named critical section is a lock named by its name at the user's line; a
//! balanced dynamic loop stays quiet (issue 23).

mod common;

use common::{TempDir, profile_with, report_json, test_source};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn build_with(dir: &Path, name: &str, compiler: &str) -> PathBuf {
    let exe = dir.join(name.trim_end_matches(".c"));
    let out = Command::new(compiler)
        .args(["-O2", "-g", "-fopenmp", "-o"])
        .arg(&exe)
        .arg(test_source("omp_programs", name))
        .output()
        .unwrap_or_else(|e| {
            panic!("running {compiler} (Debian packages gcc, clang, libomp-dev): {e}")
        });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Profiles `name` with a team of 2 threads.
fn profile_omp(name: &str, args: &[&str]) -> Value {
    profile_omp_with(name, args, "cc")
}

fn profile_omp_with(name: &str, args: &[&str], compiler: &str) -> Value {
    let dir = TempDir::new("openmp");
    let exe = build_with(&dir, name, compiler);
    let mut cmd = vec![exe.display().to_string()];
    cmd.extend(args.iter().map(|a| a.to_string()));
    let (_, prof) = profile_with(&dir, "omp.prof", &["-q"], &cmd, 0, |c| {
        c.env("OMP_NUM_THREADS", "2");
    });
    report_json(&prof)
}

fn finding<'a>(r: &'a Value, id: &str) -> Option<&'a Value> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

/// No OpenMP wait may read as a lock inside the C library or as anonymous spinning in libgomp.
fn assert_no_libgomp_alarms(r: &Value) {
    for f in r["findings"].as_array().unwrap() {
        let text = f.to_string();
        assert!(
            f["id"] != "glibc-lock-contention" && !text.contains("libgomp.so"),
            "an OpenMP wait read as the C library's or libgomp's: {f:#}"
        );
    }
}

#[test]
fn an_imbalanced_static_loop_is_load_imbalance_at_its_regions_barrier() {
    let r = profile_omp("imbalanced_static.c", &["20000", "10"]);
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    let region = regions
        .iter()
        .find(|x| {
            x["region"]
                .as_str()
                .unwrap()
                .contains("imbalanced_static.c:20")
        })
        .unwrap_or_else(|| panic!("no region at the pragma's line: {regions:#?}"));
    assert_eq!(region["runs"], 10);
    assert_eq!(region["team"], 2.0);
    // The first half of the items costs 10x: the thread with the second half waits most of
    // each run (an even split would wait none).
    let share = region["barrier_share"].as_f64().unwrap();
    assert!(share > 0.2 && share <= 1.0, "{region:#}");
    let f = finding(&r, "omp-load-imbalance")
        .unwrap_or_else(|| panic!("no omp-load-imbalance: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("parallel region in main at imbalanced_static.c:20"),
        "{title}"
    );
    assert!(f["stake_ns"].as_u64().unwrap() <= r["wall_ns"].as_u64().unwrap_or(u64::MAX));
    assert_no_libgomp_alarms(&r);
    assert!(
        !common::finding_ids(&r).contains(&"serial-section".to_string()),
        "{:#}",
        r["findings"]
    );
    // The waiting thread is idle at the barrier, not in a lock.
    let worker = r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["main"] != true)
        .expect("a worker");
    let life = worker["wall_ns"].as_f64().unwrap();
    let lock = worker["states"]["lock_ns"].as_f64().unwrap_or(0.0);
    assert!(lock / life < 0.05, "{worker:#}");
}

#[test]
fn a_named_critical_section_is_a_lock_named_at_the_users_line() {
    let r = profile_omp("critical_section.c", &["40000"]);
    let lock = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "omp-critical")
        .unwrap_or_else(|| panic!("no critical section among the locks: {:#}", r["locks"]));
    assert_eq!(lock["runtime"]["object"], "critical section");
    assert_eq!(
        lock["acquisitions"], 40000,
        "every acquisition counted: {lock:#}"
    );
    assert!(lock["hold_ns"].as_u64().unwrap() > 0, "{lock:#}");
    assert_no_libgomp_alarms(&r);
    for f in r["findings"].as_array().unwrap() {
        if f["id"] == "spinning" {
            panic!("the critical section's wait read as spinning: {f:#}");
        }
        if f["id"] == "runtime-lock-contention" {
            let title = f["title"].as_str().unwrap();
            assert!(title.contains("critical section `table_update`"), "{title}");
            assert!(title.contains("critical_section.c:21"), "{title}");
        }
    }
}

#[test]
fn a_balanced_dynamic_loop_stays_quiet() {
    let r = profile_omp("balanced_dynamic.c", &["20000", "10"]);
    for id in common::finding_ids(&r) {
        assert!(
            !matches!(
                id.as_str(),
                "omp-load-imbalance"
                    | "glibc-lock-contention"
                    | "lock-contention"
                    | "runtime-lock-contention"
                    | "spinning"
                    | "serial-section"
            ),
            "a false alarm on a balanced OpenMP loop: {id}: {:#}",
            r["findings"]
        );
    }
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert!(!regions.is_empty());
}

#[test]
fn clang_and_libomp_critical_sections_are_named_locks_and_barriers_idle() {
    // clang's OpenMP runtime (LLVM's libomp): its critical sections through __kmpc_critical.
    let r = profile_omp_with("critical_section.c", &["40000"], "clang");
    let lock = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "omp-critical")
        .unwrap_or_else(|| panic!("no critical section among the locks: {:#}", r["locks"]));
    assert_eq!(lock["acquisitions"], 40000, "{lock:#}");
    // libomp loads stallscope as its ITT collector too, and is served nothing (preload/itt.c):
    // its critical sections are counted once, as omp.c's.
    assert!(
        !r["locks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["kind"] == "itt-sync"),
        "{:#}",
        r["locks"]
    );
    assert_no_libgomp_alarms(&r);
    for f in r["findings"].as_array().unwrap() {
        assert!(
            !f.to_string().contains("libomp.so"),
            "a wait in libomp named by the library: {f:#}"
        );
        if f["id"] == "runtime-lock-contention" {
            let title = f["title"].as_str().unwrap();
            assert!(title.contains("critical section `table_update`"), "{title}");
        }
    }
    // Its barrier waits are the runtime's idle team, never a lock or spinning to report.
    let r = profile_omp_with("imbalanced_static.c", &["20000", "10"], "clang");
    assert_no_libgomp_alarms(&r);
    for id in common::finding_ids(&r) {
        assert!(
            !matches!(
                id.as_str(),
                "spinning" | "lock-contention" | "glibc-lock-contention"
            ),
            "{id}: {:#}",
            r["findings"]
        );
    }
}

#[test]
fn many_tiny_regions_are_too_small_for_their_fork_join() {
    let r = profile_omp("small_regions.c", &["300000"]);
    let f = finding(&r, "omp-small-regions")
        .unwrap_or_else(|| panic!("no omp-small-regions: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("small_regions.c:12"), "{title}");
    assert!(title.contains("300,000 times"), "{title}");
    assert!(f["stake_ns"].as_u64().unwrap() <= r["wall_ns"].as_u64().unwrap_or(u64::MAX));
    // Its members' uneven ends are wake-up jitter, not an imbalance of the work.
    assert!(
        finding(&r, "omp-load-imbalance").is_none(),
        "{:#}",
        r["findings"]
    );
    assert_no_libgomp_alarms(&r);
    // The imbalanced loop's regions are long: not too small.
    let r = profile_omp("imbalanced_static.c", &["20000", "10"]);
    assert!(
        finding(&r, "omp-small-regions").is_none(),
        "{:#}",
        r["findings"]
    );
}
