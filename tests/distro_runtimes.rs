//! The runtimes as distributions ship them: Debian's shared, stripped libabsl
//! (its inline namespace `absl::debian3`), libtbb, libgomp and LLVM's libomp, and a Rust std with
//! and without debug info. Two threads contend on one lock of each (tests/distro_programs,
//! tests/rust_programs/src/bin/distro_std_mutex.rs): the lock table has the lock in the runtime's
//! words and the top finding names it; each program's quiet control (every thread its own lock,
//! the same calls) gets no lock finding. Where no entry point names a futex wait, what the
//! threads did decides (the waiters woke each other: the waker was the holder) and the library
//! the wait lies in names the runtime: `lock in libtbb`, never a user function's name.

mod common;

use common::{TempDir, profile_with, report_json, test_source, try_compile};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Findings that name a lock as the cause.
const LOCK_FINDINGS: &[&str] = &[
    "runtime-lock-contention",
    "lock-contention",
    "lock-held-while-asleep",
    "lock-held-across-io",
];

fn findings(r: &Value) -> &Vec<Value> {
    r["findings"].as_array().expect("findings")
}

/// The lock rows whose runtime is `runtime` and whose kind column (`runtime.object`) contains
/// `object`.
fn runtime_locks<'a>(r: &'a Value, runtime: &str, object: &str) -> Vec<&'a Value> {
    r["locks"]
        .as_array()
        .expect("locks")
        .iter()
        .filter(|l| {
            l["runtime"]["runtime"] == runtime
                && l["runtime"]["object"]
                    .as_str()
                    .is_some_and(|o| o.contains(object))
        })
        .collect()
}

/// The contended program's checks: a lock row of `runtime` named `object` that threads waited
/// on, and the first finding above INFO a lock finding whose title names it (and `at`, the
/// program's own place, where given). A run whose threads other processes kept off the CPUs
/// skips the finding's rank, never the row.
fn assert_named_lock(test: &str, r: &Value, runtime: &str, object: &str, at: Option<&str>) {
    let rows = runtime_locks(r, runtime, object);
    let row = rows
        .iter()
        .max_by_key(|l| l["wait_ns"].as_u64().unwrap_or(0))
        .unwrap_or_else(|| {
            panic!(
                "{test}: no lock row of {runtime} named {object}: {:#}",
                r["locks"]
            )
        });
    assert!(
        row["contended"].as_u64().unwrap_or(0) > 0 && row["wait_ns"].as_u64().unwrap_or(0) > 0,
        "{test}: {row:#}"
    );
    // Never a bare futex word, a lock inside the C library, or a runtime's idle workers.
    for f in findings(r) {
        let id = f["id"].as_str().unwrap_or("");
        assert!(
            id != "glibc-lock-contention" && id != "arena-lock",
            "{test}: the runtime's lock read as the C library's: {f:#}"
        );
    }
    let lock_finding = findings(r)
        .iter()
        .find(|f| LOCK_FINDINGS.contains(&f["id"].as_str().unwrap_or("")));
    let top = findings(r).iter().find(|f| f["severity"] != "info");
    let is_top = match (lock_finding, top) {
        (Some(l), Some(t)) => l == t,
        _ => false,
    };
    if !is_top {
        if let Some(why) = common::starved(r, 0.3) {
            common::skipped(test, &why);
            return;
        }
        panic!(
            "{test}: the top finding is not the lock of {runtime}: {:#}",
            r["findings"]
        );
    }
    let title = lock_finding.unwrap()["title"].as_str().unwrap();
    assert!(title.contains(object), "{test}: {title}");
    if let Some(at) = at {
        assert!(
            title.contains(at),
            "{test}: at the program's place {at}: {title}"
        );
    }
}

/// The quiet control's checks: no lock finding, no lock of the runtime that anyone waited on.
fn assert_quiet(test: &str, r: &Value) {
    for f in findings(r) {
        assert!(
            !LOCK_FINDINGS.contains(&f["id"].as_str().unwrap_or("")),
            "{test}: a lock finding without contention: {f:#}"
        );
    }
    // A runtime's own lock met once at a thread's start (abseil's SpinLock, under a
    // microsecond) is contention the program cannot feel; a millisecond of waiting is not.
    for l in r["locks"].as_array().expect("locks") {
        assert!(
            l["wait_ns"].as_u64().unwrap_or(0) < 1_000_000 || l["runtime"].is_null(),
            "{test}: a runtime's lock waited on without contention: {l:#}"
        );
    }
}

/// The line of `MARK <name>` in a test program of tests/distro_programs.
fn mark(source: &str, name: &str) -> String {
    let text = std::fs::read_to_string(test_source("distro_programs", source)).unwrap();
    let line = 1 + text
        .lines()
        .position(|l| l.contains(&format!("MARK {name}")))
        .unwrap();
    format!("{source}:{line}")
}

/// Builds tests/distro_programs/`source` into `dir`/`name` with `compiler` and `flags` (after the
/// source); None (a skip outside CI) where the distribution's package is missing.
fn build(
    dir: &Path,
    source: &str,
    name: &str,
    compiler: &str,
    flags: &[&str],
    install: &str,
) -> Option<PathBuf> {
    try_compile(
        compiler,
        dir,
        &test_source("distro_programs", source),
        name,
        flags,
        install,
    )
}

/// Profiles `exe ARGS` (OpenMP teams of 2) and returns its report.
fn profile_program(dir: &Path, tag: &str, exe: &Path, args: &[&str]) -> Value {
    let mut cmd = vec![exe.display().to_string()];
    cmd.extend(args.iter().map(|a| a.to_string()));
    let _machine = common::machine();
    let (_, prof) = profile_with(dir, &format!("{tag}.prof"), &["-q"], &cmd, 0, |c| {
        c.env("OMP_NUM_THREADS", "2");
    });
    report_json(&prof)
}

#[test]
fn abseils_mutex_from_debians_shared_libabsl_is_a_named_lock() {
    let dir = TempDir::new("distro-absl");
    let Some(exe) = build(
        &dir,
        "absl_mutex.cpp",
        "absl_mutex",
        "c++",
        &["-g", "-std=c++17", "-pthread", "-labsl_synchronization"],
        "apt-get install libabsl-dev",
    ) else {
        return;
    };
    let r = profile_program(&dir, "contended", &exe, &["contended"]);
    let at = mark("absl_mutex.cpp", "lock");
    assert_named_lock("absl", &r, "abseil", "absl::Mutex", Some(&at));
    // Each waiting thread sleeps on a word of its own: one lock, its words grouped.
    assert_eq!(
        runtime_locks(&r, "abseil", "absl::Mutex").len(),
        1,
        "{:#}",
        r["locks"]
    );
    let q = profile_program(&dir, "quiet", &exe, &["quiet"]);
    assert_quiet("absl quiet", &q);
}

#[test]
fn a_tbb_mutex_from_debians_libtbb_is_a_named_lock_with_or_without_debug_info() {
    let dir = TempDir::new("distro-tbb");
    let flags = ["-std=c++17", "-pthread", "-ltbb"];
    let Some(exe) = build(
        &dir,
        "tbb_mutex.cpp",
        "tbb_mutex",
        "c++",
        &[&["-g"][..], &flags].concat(),
        "apt-get install libtbb-dev",
    ) else {
        return;
    };
    let r = profile_program(&dir, "contended", &exe, &["contended", "mutex"]);
    let at = mark("tbb_mutex.cpp", "lock");
    assert_named_lock("tbb::mutex", &r, "TBB", "tbb::mutex", Some(&at));
    // Never TBB's idle workers: the sleep in libtbb is the lock's.
    let q = profile_program(&dir, "quiet", &exe, &["quiet", "mutex"]);
    assert_quiet("tbb::mutex quiet", &q);

    // Without debug info no frame names tbb::mutex (its lock() is inlined from the header): the
    // waiters woke each other inside libtbb, so it is a lock of TBB's, named by its library.
    let Some(bare) = build(
        &dir,
        "tbb_mutex.cpp",
        "tbb_mutex_bare",
        "c++",
        &flags,
        "apt-get install libtbb-dev",
    ) else {
        return;
    };
    let r = profile_program(&dir, "bare", &bare, &["contended", "mutex"]);
    assert_named_lock("tbb::mutex without -g", &r, "TBB", "lock in libtbb", None);
}

#[test]
fn omp_locks_and_critical_sections_of_debians_libgomp_and_libomp_are_named_locks() {
    let dir = TempDir::new("distro-omp");
    for (compiler, install) in [
        ("cc", "apt-get install gcc"),
        ("clang", "apt-get install clang libomp-dev"),
    ] {
        let Some(exe) = build(
            &dir,
            "omp_lock.c",
            &format!("omp_lock_{compiler}"),
            compiler,
            &["-g", "-fopenmp"],
            install,
        ) else {
            continue;
        };
        for (what, object) in [("lock", "omp lock"), ("critical", "critical section")] {
            let test = format!("{compiler} {what}");
            let r = profile_program(&dir, &test.replace(' ', "-"), &exe, &["contended", what]);
            assert_named_lock(&test, &r, "OpenMP", object, Some(&mark("omp_lock.c", what)));
        }
        let q = profile_program(&dir, &format!("{compiler}-quiet"), &exe, &["quiet", "lock"]);
        assert_quiet(&format!("{compiler} quiet"), &q);
    }
}

/// tests/rust_programs' distro_std_mutex built with `profile` (`release`: with debug info;
/// `nodebug`: std's symbols only, as `cargo build --release` ships a program).
fn rust_program(profile: &str) -> PathBuf {
    common::rust_programs(profile, Some("distro_std_mutex")).join("distro_std_mutex")
}

#[test]
fn a_rust_std_mutex_is_a_named_lock_with_and_without_debug_info() {
    let dir = TempDir::new("distro-rust");
    for build in ["release", "nodebug"] {
        let exe = rust_program(build);
        let r = profile_program(&dir, build, &exe, &["contended"]);
        assert_named_lock(
            &format!("std::sync::Mutex ({build})"),
            &r,
            "Rust std",
            "std::sync::Mutex",
            Some("COUNTER"),
        );
        let q = profile_program(&dir, &format!("{build}-quiet"), &exe, &["quiet"]);
        assert_quiet(&format!("std::sync::Mutex quiet ({build})"), &q);
    }
}
