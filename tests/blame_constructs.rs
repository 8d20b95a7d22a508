//! Idle time blamed on the work that ran meanwhile, construct by construct:
//! every program of tests/blame_programs (OpenMP built by GCC for libgomp and by clang for LLVM's
//! libomp, oneTBB, C++20) and rayon's (tests/rust_programs/src/bin/blame_rayon.rs) runs with 2
//! threads in a balanced and an unbalanced variant. In the unbalanced one a thread runs a
//! `culprit_*` function while the others wait for it inside the construct: a HIGH or MEDIUM
//! finding names that function. The balanced one gets no HIGH or MEDIUM finding that would call
//! it serial, imbalanced or taking turns. Every report also keeps the invariants of every report
//! (`report_json` checks them).
//!
//! Each test prints one `STATUS` line (what the report said) whatever its outcome. As in the other
//! tests whose programs' threads must run together, a run that other processes kept off the CPUs
//! for more than 15% of its threads' lives (`common::starved`) and misses the expectation prints
//! `SKIPPED` instead of failing.

mod common;

use common::{TempDir, profile_with, report_json, try_compile};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// The findings that call a program's threads serial, imbalanced or taking turns: a balanced
/// program gets none of them at HIGH or MEDIUM. (`omp-imbalance` is the name for what the
/// report calls `omp-load-imbalance`.)
const IMBALANCE_FAMILY: [&str; 7] = [
    "work-ran-alone",
    "serial-section",
    "load-imbalance",
    "omp-imbalance",
    "omp-load-imbalance",
    "taking-turns",
    "mostly-serial",
];

#[derive(Clone, Copy, Debug)]
enum Program {
    /// An OpenMP program of tests/blame_programs, built by this C compiler (`cc`: GCC's libgomp,
    /// `clang`: LLVM's libomp).
    Omp(&'static str, &'static str),
    /// A oneTBB program of tests/blame_programs.
    Tbb(&'static str),
    /// A C++20 program of tests/blame_programs.
    Cxx20(&'static str),
    /// A construct of blame_rayon (join, scope, par_iter).
    Rayon(&'static str),
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    Balanced,
    /// The function the report must name.
    Unbalanced(&'static str),
}

/// Builds, reports and profiled runs at once would measure each other: builds and reports share
/// the CPUs with each other, a profiled run has them to itself (with `common::machine()`).
static CPUS: RwLock<()> = RwLock::new(());

/// One build per program and compiler per test run, whichever of its tests comes first; `None`
/// where a compiler or library is missing and the policy of `common::have` skips.
fn built(key: String, build: impl FnOnce() -> Option<PathBuf>) -> Option<PathBuf> {
    type Cells = BTreeMap<String, Arc<OnceLock<Option<PathBuf>>>>;
    static CACHE: Mutex<Cells> = Mutex::new(BTreeMap::new());
    let cell = CACHE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let _builds = CPUS.read().unwrap_or_else(|e| e.into_inner());
        build()
    })
    .clone()
}

/// Where the programs are built: the test build's own directory, as tests/rust_programs'.
fn build_dir(sub: &str) -> PathBuf {
    let dir = common::repo()
        .join("target")
        .join("blame_programs")
        .join(sub);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// The command line of a program's variant, or `None` where it cannot be built here.
fn command(program: Program, variant: Variant) -> Option<Vec<String>> {
    let variant = match variant {
        Variant::Balanced => "balanced",
        Variant::Unbalanced(_) => "unbalanced",
    };
    let source = |name: &str| common::test_source("blame_programs", name);
    let stem = |name: &str| name.split('.').next().unwrap().to_string();
    let exe = match program {
        Program::Omp(name, compiler) => built(format!("{compiler}/{name}"), || {
            try_compile(
                compiler,
                &build_dir(compiler),
                &source(name),
                &stem(name),
                &["-g", "-fopenmp", "-Wall", "-Wextra"],
                "apt-get install gcc clang libomp-dev",
            )
        })?,
        Program::Tbb(name) => built(format!("tbb/{name}"), || {
            try_compile(
                "c++",
                &build_dir("tbb"),
                &source(name),
                &stem(name),
                &["-g", "-std=c++17", "-Wall", "-Wextra", "-ltbb"],
                "apt-get install g++ libtbb-dev",
            )
        })?,
        Program::Cxx20(name) => built(format!("c++20/{name}"), || {
            try_compile(
                "c++",
                &build_dir("c++20"),
                &source(name),
                &stem(name),
                &["-g", "-std=c++20", "-pthread", "-Wall", "-Wextra"],
                "apt-get install g++ (12 or later)",
            )
        })?,
        Program::Rayon(construct) => {
            let exe = built("rayon".into(), rust_programs)?;
            return Some(vec![
                exe.display().to_string(),
                construct.into(),
                variant.into(),
            ]);
        }
    };
    Some(vec![exe.display().to_string(), variant.into()])
}

/// tests/rust_programs built (rayon from crates.io) into the test build's own target directory,
/// as tests/runtime_waits.rs builds it: blame_rayon's path.
fn rust_programs() -> Option<PathBuf> {
    Some(common::rust_programs("release", None).join("blame_rayon"))
}

fn severity(f: &Value) -> &str {
    f["severity"].as_str().unwrap_or("")
}

fn high_or_medium(f: &Value) -> bool {
    matches!(severity(f), "high" | "medium")
}

/// Whether a finding names `function` in its title or evidence.
fn names(f: &Value, function: &str) -> bool {
    f["title"].as_str().unwrap_or("").contains(function)
        || f["evidence"].as_array().is_some_and(|e| {
            e.iter()
                .any(|x| x.as_str().unwrap_or("").contains(function))
        })
}

/// Each thread's states as shares of its life (the categories above 0.5%).
fn states_text(r: &Value) -> String {
    let threads = r["threads"].as_array().map_or(&[][..], |v| v.as_slice());
    let rows: Vec<String> = threads
        .iter()
        .map(|t| {
            let life = t["wall_ns"].as_f64().unwrap_or(1.0).max(1.0);
            let shares: Vec<String> = common::STATE_KEYS
                .iter()
                .filter_map(|k| {
                    let share = t["states"][format!("{k}_ns")].as_f64().unwrap_or(0.0) / life;
                    (share > 0.005).then(|| format!("{k} {:.1}%", share * 100.0))
                })
                .collect();
            format!(
                "{}: {}",
                t["label"].as_str().unwrap_or("?"),
                shares.join(", ")
            )
        })
        .collect();
    rows.join("; ")
}

/// The share of the threads' lives that other processes kept them off the CPUs (what
/// `common::starved` compares with its limit).
fn other_runnable_share(r: &Value) -> f64 {
    let other = r["concurrency"]["other_runnable_ns"]
        .as_f64()
        .unwrap_or(0.0);
    let lives: f64 = r["threads"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .filter_map(|t| t["wall_ns"].as_f64())
        .sum();
    other / lives.max(1.0)
}

/// What the report should say of the variant, or why it does not.
fn verdict(r: &Value, variant: Variant) -> Result<(), String> {
    let findings = r["findings"].as_array().map_or(&[][..], |v| v.as_slice());
    match variant {
        Variant::Unbalanced(culprit) => {
            if findings
                .iter()
                .any(|f| high_or_medium(f) && names(f, culprit))
            {
                Ok(())
            } else {
                Err(format!("no HIGH or MEDIUM finding names {culprit}"))
            }
        }
        Variant::Balanced => {
            let alarms: Vec<&str> = findings
                .iter()
                .filter(|f| {
                    high_or_medium(f) && IMBALANCE_FAMILY.contains(&f["id"].as_str().unwrap_or(""))
                })
                .map(|f| f["id"].as_str().unwrap_or(""))
                .collect();
            if alarms.is_empty() {
                Ok(())
            } else {
                Err(format!("a balanced program read as {alarms:?}"))
            }
        }
    }
}

/// Builds `program`, profiles its `variant` with 2 threads and checks its report.
fn check(test: &str, program: Program, variant: Variant) {
    let Some(cmd) = command(program, variant) else {
        return;
    };
    let dir = TempDir::new("blame");
    let (_, prof) = {
        let _cpus = CPUS.write().unwrap_or_else(|e| e.into_inner());
        let _machine = common::machine();
        profile_with(&dir, "blame.prof", &["-q"], &cmd, 0, |c| {
            c.env("OMP_NUM_THREADS", "2");
        })
    };
    let r = {
        // Reading the profile (symbols, debug info) takes CPU time too: not while another test's
        // program runs.
        let _cpus = CPUS.read().unwrap_or_else(|e| e.into_inner());
        report_json(&prof)
    };
    let outcome = verdict(&r, variant);
    let starved = common::starved(&r, 0.15);
    eprintln!(
        "STATUS {test} | {} | {}other processes held the CPUs {:.0}% of the threads' lives | wall {:.0} ms | findings: {} | states: {}",
        if outcome.is_ok() { "PASS" } else { "FAIL" },
        if starved.is_some() { "starved: " } else { "" },
        other_runnable_share(&r) * 100.0,
        r["wall_ns"].as_f64().unwrap_or(0.0) / 1e6,
        common::findings_text(&r, " / "),
        states_text(&r)
    );
    if let Err(why) = outcome {
        if let Some(starved) = starved {
            common::skipped(test, &format!("{starved} ({why})"));
            return;
        }
        panic!(
            "{test}: {why}\nfindings: {:#}\nstates: {}",
            r["findings"],
            states_text(&r)
        );
    }
}

macro_rules! blame_tests {
    ($($test:ident: $program:expr, $variant:expr;)*) => {
        $(
            #[test]
            fn $test() {
                check(stringify!($test), $program, $variant);
            }
        )*
    };
}

use Program::{Cxx20, Omp, Rayon, Tbb};
use Variant::{Balanced, Unbalanced};

blame_tests! {
    // OpenMP, GCC's libgomp.
    gomp_single_unbalanced_names_culprit: Omp("omp_single.c", "cc"), Unbalanced("culprit_single");
    gomp_single_balanced_is_quiet: Omp("omp_single.c", "cc"), Balanced;
    gomp_masked_barrier_unbalanced_names_culprit: Omp("omp_masked.c", "cc"), Unbalanced("culprit_masked");
    gomp_masked_barrier_balanced_is_quiet: Omp("omp_masked.c", "cc"), Balanced;
    gomp_sections_unbalanced_names_culprit: Omp("omp_sections.c", "cc"), Unbalanced("culprit_section");
    gomp_sections_balanced_is_quiet: Omp("omp_sections.c", "cc"), Balanced;
    gomp_ordered_unbalanced_names_culprit: Omp("omp_ordered.c", "cc"), Unbalanced("culprit_ordered");
    gomp_ordered_balanced_is_quiet: Omp("omp_ordered.c", "cc"), Balanced;
    gomp_task_unbalanced_names_culprit: Omp("omp_task.c", "cc"), Unbalanced("culprit_task");
    gomp_task_balanced_is_quiet: Omp("omp_task.c", "cc"), Balanced;
    gomp_taskgroup_unbalanced_names_culprit: Omp("omp_taskgroup.c", "cc"), Unbalanced("culprit_taskgroup");
    gomp_taskgroup_balanced_is_quiet: Omp("omp_taskgroup.c", "cc"), Balanced;
    gomp_barrier_unbalanced_names_culprit: Omp("omp_barrier.c", "cc"), Unbalanced("culprit_barrier");
    gomp_barrier_balanced_is_quiet: Omp("omp_barrier.c", "cc"), Balanced;
    gomp_nowait_unbalanced_names_culprit: Omp("omp_nowait.c", "cc"), Unbalanced("culprit_nowait_iter");
    gomp_nowait_balanced_is_quiet: Omp("omp_nowait.c", "cc"), Balanced;
    // OpenMP, LLVM's libomp.
    llvm_omp_single_unbalanced_names_culprit: Omp("omp_single.c", "clang"), Unbalanced("culprit_single");
    llvm_omp_single_balanced_is_quiet: Omp("omp_single.c", "clang"), Balanced;
    llvm_omp_masked_barrier_unbalanced_names_culprit: Omp("omp_masked.c", "clang"), Unbalanced("culprit_masked");
    llvm_omp_masked_barrier_balanced_is_quiet: Omp("omp_masked.c", "clang"), Balanced;
    llvm_omp_sections_unbalanced_names_culprit: Omp("omp_sections.c", "clang"), Unbalanced("culprit_section");
    llvm_omp_sections_balanced_is_quiet: Omp("omp_sections.c", "clang"), Balanced;
    llvm_omp_ordered_unbalanced_names_culprit: Omp("omp_ordered.c", "clang"), Unbalanced("culprit_ordered");
    llvm_omp_ordered_balanced_is_quiet: Omp("omp_ordered.c", "clang"), Balanced;
    llvm_omp_task_unbalanced_names_culprit: Omp("omp_task.c", "clang"), Unbalanced("culprit_task");
    llvm_omp_task_balanced_is_quiet: Omp("omp_task.c", "clang"), Balanced;
    llvm_omp_taskgroup_unbalanced_names_culprit: Omp("omp_taskgroup.c", "clang"), Unbalanced("culprit_taskgroup");
    llvm_omp_taskgroup_balanced_is_quiet: Omp("omp_taskgroup.c", "clang"), Balanced;
    llvm_omp_barrier_unbalanced_names_culprit: Omp("omp_barrier.c", "clang"), Unbalanced("culprit_barrier");
    llvm_omp_barrier_balanced_is_quiet: Omp("omp_barrier.c", "clang"), Balanced;
    llvm_omp_nowait_unbalanced_names_culprit: Omp("omp_nowait.c", "clang"), Unbalanced("culprit_nowait_iter");
    llvm_omp_nowait_balanced_is_quiet: Omp("omp_nowait.c", "clang"), Balanced;
    // oneTBB.
    tbb_parallel_for_unbalanced_names_culprit: Tbb("tbb_parallel_for.cpp"), Unbalanced("culprit_heavy_item");
    tbb_parallel_for_balanced_is_quiet: Tbb("tbb_parallel_for.cpp"), Balanced;
    tbb_pipeline_unbalanced_names_culprit: Tbb("tbb_pipeline.cpp"), Unbalanced("culprit_stage");
    tbb_pipeline_balanced_is_quiet: Tbb("tbb_pipeline.cpp"), Balanced;
    tbb_task_group_unbalanced_names_culprit: Tbb("tbb_task_group.cpp"), Unbalanced("culprit_long_task");
    tbb_task_group_balanced_is_quiet: Tbb("tbb_task_group.cpp"), Balanced;
    tbb_parallel_invoke_unbalanced_names_culprit: Tbb("tbb_parallel_invoke.cpp"), Unbalanced("culprit_invoke");
    tbb_parallel_invoke_balanced_is_quiet: Tbb("tbb_parallel_invoke.cpp"), Balanced;
    // C++20.
    cxx_barrier_unbalanced_names_culprit: Cxx20("cxx_barrier.cpp"), Unbalanced("culprit_phase");
    cxx_barrier_balanced_is_quiet: Cxx20("cxx_barrier.cpp"), Balanced;
    cxx_latch_unbalanced_names_culprit: Cxx20("cxx_latch.cpp"), Unbalanced("culprit_before_count_down");
    cxx_latch_balanced_is_quiet: Cxx20("cxx_latch.cpp"), Balanced;
    cxx_semaphore_unbalanced_names_culprit: Cxx20("cxx_semaphore.cpp"), Unbalanced("culprit_step");
    cxx_semaphore_balanced_is_quiet: Cxx20("cxx_semaphore.cpp"), Balanced;
    // rayon.
    rayon_join_unbalanced_names_culprit: Rayon("join"), Unbalanced("culprit_join_half");
    rayon_join_balanced_is_quiet: Rayon("join"), Balanced;
    rayon_scope_unbalanced_names_culprit: Rayon("scope"), Unbalanced("culprit_long_spawn");
    rayon_scope_balanced_is_quiet: Rayon("scope"), Balanced;
    rayon_par_iter_unbalanced_names_culprit: Rayon("par_iter"), Unbalanced("culprit_heavy_item");
    rayon_par_iter_balanced_is_quiet: Rayon("par_iter"), Balanced;
}
