//! OpenMP programs built with GCC (libgomp: no OMPT, futex waits by an inline system call) and
//! with clang (LLVM's libomp, seen through OMPT): an imbalanced static loop is load imbalance at its region's barrier, never a lock inside the
//! C library; a named critical section is a lock named by its name at the user's line; a
//! balanced dynamic loop stays quiet.

mod common;

use common::{TempDir, compile_file, profile_with, report_json, stallscope_in_repo, test_source};
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
    profile_omp_team(name, args, compiler, 2)
}

/// `name` built by `compiler` and profiled with a team of `threads`.
fn profile_omp_team(name: &str, args: &[&str], compiler: &str, threads: usize) -> Value {
    let dir = TempDir::new("openmp");
    let exe = build_with(&dir, name, compiler);
    let mut cmd = vec![exe.display().to_string()];
    cmd.extend(args.iter().map(|a| a.to_string()));
    // One team at a time: a spinning team on CPUs another team holds can take many times as long
    // (libgomp spins up to 300,000 rounds at each barrier before it sleeps).
    let _machine = common::machine();
    let (_, prof) = profile_with(&dir, "omp.prof", &["-q"], &cmd, 0, |c| {
        c.env("OMP_NUM_THREADS", threads.to_string());
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

/// A balanced loop gets none of the alarms an OpenMP wait could be mistaken for, nor `also`.
fn assert_quiet_balanced_loop(r: &Value, also: &[&str]) {
    const ALARMS: [&str; 8] = [
        "omp-load-imbalance",
        "glibc-lock-contention",
        "lock-contention",
        "runtime-lock-contention",
        "lock-held-while-asleep",
        "lock-held-across-io",
        "spinning",
        "serial-section",
    ];
    for id in common::finding_ids(r) {
        assert!(
            !ALARMS.contains(&id.as_str()) && !also.contains(&id.as_str()),
            "a false alarm on a balanced OpenMP loop: {id}: {:#}",
            r["findings"]
        );
    }
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

/// The timeline's runs of regions: every region in exactly one run, each run inside the process's
/// life, one thread's runs in order without overlap, shares within 0-100%. Returns the runs.
fn region_runs(r: &Value, regions: u64) -> &Vec<Value> {
    let runs = r["omp_runs"].as_array().expect("omp_runs");
    let wall = r["wall_ns"].as_u64().unwrap();
    let counted: u64 = runs.iter().map(|x| x["regions"].as_u64().unwrap()).sum();
    assert_eq!(counted, regions, "{runs:#?}");
    let mut last_end = 0;
    for x in runs {
        let (b, e) = (
            x["begin_ns"].as_u64().unwrap(),
            x["end_ns"].as_u64().unwrap(),
        );
        assert!(b <= e && e <= wall, "{x:#} (wall {wall})");
        assert!(b >= last_end, "runs overlap: {runs:#?}");
        last_end = e;
        let share = x["barrier_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{x:#}");
    }
    runs
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
    // On the timeline: the ten regions, back to back, are one band named at the pragma's line,
    // with the same share of the team's time at the barrier as the region table's.
    let runs = region_runs(&r, 10);
    for x in runs {
        assert!(
            x["region"]
                .as_str()
                .unwrap()
                .contains("imbalanced_static.c:20"),
            "{x:#}"
        );
        let run_share = x["barrier_share"].as_f64().unwrap();
        assert!((run_share - share).abs() < 0.1, "{x:#} against {region:#}");
    }
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

/// A balanced static loop on twice as many threads as CPUs: each member gets the same work, and
/// the ones that waited for a CPU end last. Its barrier wait is the CPUs', which oversubscription
/// names; it read as load imbalance (low or medium, 3 runs of 3), whose remedy (a dynamic
/// schedule) would not help.
#[test]
fn a_balanced_static_loop_on_more_threads_than_cpus_is_oversubscription_not_imbalance() {
    let threads = 2 * std::thread::available_parallelism().map_or(2, |n| n.get());
    let r = profile_omp_team("balanced_static.c", &[], "cc", threads);
    let ids = common::finding_ids(&r);
    assert!(
        ids.iter().any(|id| id == "oversubscription"),
        "{threads} threads on half as many CPUs must wait for them: {:#}",
        r["findings"]
    );
    assert!(
        finding(&r, "omp-load-imbalance").is_none(),
        "{:#}",
        r["findings"]
    );
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

/// The lock objects of `short_locks.c` (four), each taken `n` times (the nest lock twice, nested):
/// every acquisition counted. Returns them.
fn short_locks(r: &Value, n: u64) -> Vec<&Value> {
    let locks: Vec<&Value> = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "omp-critical" || l["kind"] == "omp-lock")
        .collect();
    assert_eq!(locks.len(), 4, "{:#}", r["locks"]);
    let mut taken: Vec<u64> = locks
        .iter()
        .map(|l| l["acquisitions"].as_u64().unwrap())
        .collect();
    taken.sort_unstable();
    assert_eq!(taken, [n, n, n, 2 * n], "{locks:#?}");
    locks
}

/// Profiles `short_locks.c` built by `compile` (an object) and linked by `link` (its OpenMP
/// runtime) with one thread.
fn profile_short_locks_alone(n: u64, link: &str) -> Value {
    let dir = TempDir::new("openmp");
    let obj = dir.join("short_locks.o");
    let exe = dir.join("short_locks");
    for (compiler, args, out) in [
        ("cc", vec!["-O2", "-g", "-fopenmp", "-c", "-o"], &obj),
        (link, vec!["-fopenmp", "-o"], &exe),
    ] {
        let mut c = Command::new(compiler);
        c.args(args).arg(out);
        if out == &obj {
            c.arg(test_source("omp_programs", "short_locks.c"));
        } else {
            c.arg(&obj);
        }
        let o = c.output().expect(compiler);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // One profiled program at a time, as profile_omp's: a loop of acquisitions beside another
    // test's team keeps its threads off the CPUs (the master read idle at its barrier).
    let _machine = common::machine();
    let (_, prof) = profile_with(
        &dir,
        "omp.prof",
        &["-q"],
        &[exe.display().to_string(), n.to_string()],
        0,
        |c| {
            c.env("OMP_NUM_THREADS", "1");
        },
    );
    report_json(&prof)
}

#[test]
fn a_single_threads_critical_sections_and_locks_wait_for_nothing() {
    // libgomp: each acquisition's first step is the hooks' own (the runtime's compare-and-swap,
    // or omp_test_lock), so a lock no thread holds is never a wait, however long an interrupt
    // made the call; and the thread's time inside the calls is its work, not lock waits.
    let n = 300_000;
    let r = profile_short_locks_alone(n, "cc");
    for l in short_locks(&r, n) {
        assert_eq!(l["contended"], 0, "{l:#}");
        assert_eq!(l["wait_ns"], 0, "{l:#}");
    }
    // Its time inside the calls is not lock waits (it was 55% of the thread's life); a sample
    // at one of the C library's own atomics elsewhere may still read as one.
    for t in r["threads"].as_array().unwrap() {
        let (wait, life) = (t["lock_wait_ns"].as_u64(), t["wall_ns"].as_u64());
        assert!(wait.unwrap() * 20 < life.unwrap(), "{t:#}");
    }
    for id in common::finding_ids(&r) {
        assert!(!id.contains("lock"), "{id}: {:#}", r["findings"]);
    }
}

#[test]
fn gcc_built_critical_sections_on_libomp_are_counted_without_the_libgomp_steps() {
    // libomp answers GOMP_critical_*name* with a lock object of its own: the check made once
    // keeps the hooks off the libgomp step there, and omp_test_lock is libomp's own.
    let n = 100_000;
    let r = profile_short_locks_alone(n, "clang");
    for l in short_locks(&r, n) {
        if l["kind"] == "omp-lock" {
            assert_eq!(l["contended"], 0, "{l:#}");
        }
    }
}

#[test]
fn a_balanced_dynamic_loop_stays_quiet() {
    let r = profile_omp("balanced_dynamic.c", &["20000", "10"]);
    assert_quiet_balanced_loop(&r, &[]);
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert!(!regions.is_empty());
}

/// No wait in LLVM's libomp may be named by the library (it is the runtime's idle team or a
/// critical section named by its variable).
fn assert_no_libomp_alarms(r: &Value) {
    assert_no_libgomp_alarms(r);
    for f in r["findings"].as_array().unwrap() {
        assert!(
            !f.to_string().contains("libomp.so"),
            "a wait in libomp named by the library: {f:#}"
        );
    }
}

// clang's programs (LLVM's libomp): stallscope is their OMPT tool. A region is named by its call
// site in the user's code (the pragma's line), its barrier wait measured; critical sections and
// omp locks come from the __kmpc_critical / omp_set_lock hooks, counted once.

#[test]
fn clang_an_imbalanced_static_loop_is_load_imbalance_at_its_regions_barrier() {
    let r = profile_omp_with("imbalanced_static.c", &["20000", "10"], "clang");
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert_eq!(regions.len(), 1, "one region, counted once: {regions:#?}");
    let region = &regions[0];
    assert_eq!(
        region["region"], "the parallel region in main at imbalanced_static.c:20",
        "{region:#}"
    );
    assert_eq!(region["runs"], 10);
    assert_eq!(region["team"], 2.0);
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
    assert_no_libomp_alarms(&r);
    for id in common::finding_ids(&r) {
        assert!(
            !matches!(
                id.as_str(),
                "spinning"
                    | "lock-contention"
                    | "lock-held-while-asleep"
                    | "glibc-lock-contention"
                    | "serial-section"
            ),
            "{id}: {:#}",
            r["findings"]
        );
    }
    // The regions are long: not too small.
    assert!(
        finding(&r, "omp-small-regions").is_none(),
        "{:#}",
        r["findings"]
    );
}

#[test]
fn clang_a_region_in_an_inlined_function_is_one_region_at_its_pragma() {
    // clang names no outlined body by its function: the region is named by its call site, whose
    // innermost frame is the inlined function's; the unrolled caller's four copies are one region.
    let r = profile_omp_with("inlined_region.c", &["8000"], "clang");
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert_eq!(regions.len(), 1, "{regions:#?}");
    assert_eq!(
        regions[0]["region"],
        "the parallel region in step at inlined_region.c:16"
    );
    assert_eq!(regions[0]["runs"], 4, "{regions:#?}");
    let f = finding(&r, "omp-load-imbalance")
        .unwrap_or_else(|| panic!("no omp-load-imbalance: {:#}", r["findings"]));
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("parallel region in step at inlined_region.c:16"),
        "{f:#}"
    );
}

#[test]
fn clang_a_named_critical_section_is_a_lock_named_at_the_users_line() {
    let r = profile_omp_with("critical_section.c", &["40000"], "clang");
    let locks: Vec<&Value> = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "omp-critical")
        .collect();
    assert_eq!(locks.len(), 1, "one critical section: {:#}", r["locks"]);
    let lock = locks[0];
    assert_eq!(lock["runtime"]["object"], "critical section");
    // Counted once: by the __kmpc_critical hook, not again through OMPT, nor through ITT
    // (libomp loads stallscope as its ITT collector too, and is served nothing: preload/itt.c).
    assert_eq!(lock["acquisitions"], 40000, "{lock:#}");
    assert!(
        !r["locks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["kind"] == "itt-sync"),
        "{:#}",
        r["locks"]
    );
    assert!(lock["hold_ns"].as_u64().unwrap() > 0, "{lock:#}");
    assert_no_libomp_alarms(&r);
    // The section is most of each iteration's work: with 2 threads, one waits while the other
    // holds it.
    let f = finding(&r, "runtime-lock-contention")
        .unwrap_or_else(|| panic!("no runtime-lock-contention: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("critical section `table_update`"), "{title}");
    assert!(title.contains("critical_section.c:21"), "{title}");
    assert!(
        !common::finding_ids(&r).contains(&"spinning".to_string()),
        "{:#}",
        r["findings"]
    );
    // Its region (the parallel for around it) is named at its own pragma.
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert!(
        regions.iter().any(|x| x["region"]
            .as_str()
            .unwrap()
            .ends_with("main at critical_section.c:18")),
        "{regions:#?}"
    );
}

#[test]
fn clang_a_balanced_dynamic_loop_stays_quiet() {
    let r = profile_omp_with("balanced_dynamic.c", &["20000", "10"], "clang");
    assert_quiet_balanced_loop(&r, &["omp-small-regions"]);
    assert_no_libomp_alarms(&r);
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert_eq!(regions.len(), 1, "{regions:#?}");
    assert_eq!(
        regions[0]["region"],
        "the parallel region in main at balanced_dynamic.c:19"
    );
    assert_eq!(regions[0]["runs"], 10);
}

#[test]
fn clang_many_tiny_regions_are_too_small_not_imbalanced() {
    let r = profile_omp_with("small_regions.c", &["100000"], "clang");
    let f = finding(&r, "omp-small-regions")
        .unwrap_or_else(|| panic!("no omp-small-regions: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("main at small_regions.c:12"), "{title}");
    assert!(title.contains("100,000 times"), "{title}");
    // The members' uneven arrivals are wake-up jitter, not uneven work.
    assert!(
        finding(&r, "omp-load-imbalance").is_none(),
        "{:#}",
        r["findings"]
    );
    assert_no_libomp_alarms(&r);
}

#[test]
fn gcc_built_code_on_libomp_counts_each_region_once() {
    // GCC's code calls GOMP_parallel, which libomp also answers (and reports through OMPT with
    // the hook's return address as its call site): the trampoline records it, OMPT leaves it.
    let dir = TempDir::new("openmp");
    let obj = dir.join("imbalanced_static.o");
    let out = Command::new("cc")
        .args(["-O2", "-g", "-fopenmp", "-c", "-o"])
        .arg(&obj)
        .arg(test_source("omp_programs", "imbalanced_static.c"))
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let exe = dir.join("imbalanced_static");
    let out = Command::new("clang")
        .args(["-fopenmp", "-o"])
        .arg(&exe)
        .arg(&obj)
        .output()
        .expect("clang");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Alone on the machine, as profile_omp's: beside another test's team its members wait for a
    // CPU, and a barrier wait no larger than that is not load imbalance.
    let _machine = common::machine();
    let (_, prof) = profile_with(
        &dir,
        "omp.prof",
        &["-q"],
        &[exe.display().to_string(), "8000".into(), "4".into()],
        0,
        |c| {
            c.env("OMP_NUM_THREADS", "2");
        },
    );
    let r = report_json(&prof);
    let regions = r["omp_regions"].as_array().expect("omp_regions");
    assert_eq!(regions.len(), 1, "{regions:#?}");
    assert_eq!(
        regions[0]["region"],
        "the parallel region in main at imbalanced_static.c:20"
    );
    assert_eq!(regions[0]["runs"], 4, "{regions:#?}");
    assert!(
        finding(&r, "omp-load-imbalance").is_some(),
        "{:#}",
        r["findings"]
    );
}

#[test]
fn clang_with_another_ompt_tool_named_the_tool_wins_and_locks_are_still_seen() {
    // OMP_TOOL_LIBRARIES names a tool: stallscope's ompt_start_tool stands aside (libomp has one
    // tool), so the regions are not seen, but the critical section still is (its hooks).
    let dir = TempDir::new("openmp");
    let exe = build_with(&dir, "critical_section.c", "clang");
    let tool = dir.join("libother_tool.so");
    let out = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&tool)
        .arg(test_source("omp_programs", "other_tool.c"))
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _machine = common::machine(); // a team beside another test's keeps it off the CPUs
    let (run, prof) = profile_with(
        &dir,
        "omp.prof",
        &["-q"],
        &[exe.display().to_string(), "4000".into()],
        0,
        |c| {
            c.env("OMP_NUM_THREADS", "2")
                .env("OMP_TOOL_LIBRARIES", &tool);
        },
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("other tool initialized"),
        "the user's tool was not started: {stderr}"
    );
    let r = report_json(&prof);
    assert!(
        r["omp_regions"].as_array().is_none_or(|x| x.is_empty()),
        "{:#}",
        r["omp_regions"]
    );
    let lock = r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == "omp-critical")
        .unwrap_or_else(|| panic!("no critical section among the locks: {:#}", r["locks"]));
    assert_eq!(lock["acquisitions"], 4000, "{lock:#}");
}

#[test]
fn many_tiny_regions_are_too_small_for_their_fork_join() {
    let r = profile_omp("small_regions.c", &["300000"]);
    let f = finding(&r, "omp-small-regions")
        .unwrap_or_else(|| panic!("no omp-small-regions: {:#}", r["findings"]));
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("small_regions.c:12"), "{title}");
    assert!(title.contains("300,000 times"), "{title}");
    // Runs of back-to-back regions: a few bands for 300,000 regions, not one each.
    let runs = region_runs(&r, 300_000);
    assert!(runs.len() < 3_000, "{} runs", runs.len());
    assert!(f["stake_ns"].as_u64().unwrap() <= r["wall_ns"].as_u64().unwrap_or(u64::MAX));
    // Short regions are timed one in 16 and weighted (preload/omp.c): every run is counted, and
    // the estimated wall of back-to-back regions is most of the process's, never more (a weight
    // applied to the times and not to the count of timed runs, or the other way, puts it 16
    // times off).
    let region = &r["omp_regions"][0];
    assert_eq!(region["runs"], 300_000, "{region:#}");
    assert_eq!(region["team"].as_f64(), Some(2.0), "{region:#}");
    let (wall, process) = (
        region["wall_ns"].as_f64().unwrap(),
        r["wall_ns"].as_f64().unwrap(),
    );
    assert!(wall <= process, "{region:#}: process wall {process}");
    // The lower bound holds when the team had its CPUs. On a machine busy with other work the
    // process's wall is mostly preemption, which a sampled run longer than the cap (160 us) does
    // not count (preload/omp.c): under three CPU hogs the estimate was 0.12-0.90 of the process's
    // wall, its CPU time 0.8 of it (the full suite's other tests did the same once, at 0.32).
    let cpu = r["cpu_ns"].as_f64().unwrap();
    if cpu >= 1.5 * process {
        assert!(wall >= 0.4 * process, "{region:#}: process wall {process}");
    } else {
        eprintln!(
            "the team did not have its CPUs (CPU {cpu} ns in {process} ns): lower bound not checked"
        );
    }
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

#[test]
fn parallel_regions_are_bands_on_the_text_and_html_timelines() {
    let dir = TempDir::new("openmp-timeline");
    let exe = build_with(&dir, "imbalanced_static.c", "cc");
    let _machine = common::machine();
    let (_, prof) = profile_with(
        &dir,
        "omp.prof",
        &["-q"],
        &[exe.display().to_string(), "8000".into(), "6".into()],
        0,
        |c| {
            c.env("OMP_NUM_THREADS", "2");
        },
    );
    let prof_path = prof.to_str().unwrap();
    let text = common::stallscope_in_repo(&["report", prof_path]);
    let text = String::from_utf8_lossy(&text);
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("(regions)"))
        .unwrap_or_else(|| panic!("no regions row in the timeline:\n{text}"));
    assert!(row.contains('1'), "{row}");
    assert!(
        text.contains("1 = the parallel region in main at imbalanced_static.c:20 (6 regions"),
        "{text}"
    );
    let page = dir.join("omp.html");
    common::stallscope_in_repo(&["html", prof_path, "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<title>parallel regions main at imbalanced_static.c:20 \u{d7}6,"),
        "no band for the regions"
    );
    assert!(html.contains("class=\"region\""), "no band for the regions");
}

/// A region's body in a stripped shared library (no name for the body nor for the library
/// function around GOMP_parallel): the master's share of the loop is computation, as the other
/// member's is, and its states add up to its life (it read idle, its states 147% of its life).
#[test]
fn a_region_in_a_stripped_library_is_the_masters_work_not_idle() {
    let dir = TempDir::new("openmp-stripped");
    let lib = dir.join("libstripped_work.so");
    let built = compile_file(
        &dir,
        &test_source("omp_programs", "stripped_lib.c"),
        &["-O2", "-g", "-fopenmp", "-shared", "-fPIC"],
    );
    std::fs::rename(&built, &lib).expect("naming the library");
    let strip = Command::new("strip")
        .arg("--strip-unneeded")
        .arg(&lib)
        .status()
        .expect("running strip (Debian package binutils)");
    assert!(strip.success(), "strip failed on {}", lib.display());
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let exe = compile_file(
        &dir,
        &test_source("omp_programs", "stripped_lib_main.c"),
        &[lib.to_str().unwrap(), &rpath],
    );
    let _machine = common::machine();
    let (_, prof) = profile_with(
        &dir,
        "omp.prof",
        &["-q"],
        &[exe.display().to_string()],
        0,
        |c| {
            c.env("OMP_NUM_THREADS", "2");
        },
    );
    let r = report_json(&prof);
    let main = common::main_thread(&r);
    let (states, life) = (&main["states"], main["wall_ns"].as_f64().unwrap());
    let ns = |k: &str| states[format!("{k}_ns")].as_f64().unwrap_or(0.0);
    let sum: f64 = common::STATE_KEYS.iter().map(|k| ns(k)).sum::<f64>() + ns("unaccounted");
    assert!(
        sum <= 1.02 * life + 2e6,
        "states sum to {sum} of {life}: {states:#}"
    );
    assert!(
        ns("compute") > 2.0 * ns("idle") && ns("compute") > 0.25 * life,
        "the master's loop is not computation: {states:#}"
    );
}

/// `source` (omp_programs) built by `compiler` into the OpenMP library `dir`/`name`.
fn build_omp_library(dir: &Path, source: &str, name: &str, compiler: &str) -> PathBuf {
    let lib = dir.join(name);
    let out = Command::new(compiler)
        .args(["-O2", "-g", "-fopenmp", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(test_source("omp_programs", source))
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lib
}

/// `main` (omp_programs, a loader linked with -ldl) run with `args`, unprofiled and profiled,
/// alone on the machine (a team beside another test's keeps its threads off the CPUs), each with
/// `env`: both succeed. The unprofiled and the profiled run's outputs, and the profile's report.
fn loader_runs(
    dir: &Path,
    main: &str,
    args: &[String],
    env: &[(&str, &str)],
) -> (String, String, Value) {
    let exe = compile_file(dir, &test_source("omp_programs", main), &["-ldl"]);
    let mut cmd = vec![exe.display().to_string()];
    cmd.extend(args.iter().cloned());
    let set = |c: &mut Command| {
        c.envs(env.iter().copied());
    };
    let _machine = common::machine();
    let plain = common::plain_run(dir, &cmd, set);
    assert!(plain.status.success(), "{}", common::describe(&plain));
    let (run, prof) = profile_with(dir, "loader.prof", &["-q"], &cmd, 0, set);
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    (text(&plain), text(&run), report_json(&prof))
}

/// The acquisitions of each critical section in a report, in its order.
fn critical_counts(r: &Value) -> Vec<u64> {
    r["locks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "omp-critical")
        .map(|l| l["acquisitions"].as_u64().unwrap())
        .collect()
}

/// A library whose constructor runs parallel regions, loaded with dlopen: its team members call
/// their first OpenMP functions while the loading thread holds the dynamic loader's lock and waits
/// for them at the region's end. The hooks found the runtime's functions with dlsym, which takes
/// that lock: the program hung under stallscope (and runs in a millisecond alone), with GCC's
/// libgomp and with clang's libomp alike.
#[test]
fn a_library_whose_constructor_runs_a_region_loads_under_stallscope() {
    let items: u64 = 400;
    for compiler in ["cc", "clang"] {
        let dir = TempDir::new("openmp-ctor");
        let lib = build_omp_library(&dir, "ctor_region.c", "libctor_region.so", compiler);
        let (plain, run, r) = loader_runs(
            &dir,
            "ctor_region_main.c",
            &[lib.display().to_string()],
            &[],
        );
        assert_eq!(run, plain, "{compiler}: the program's output changed");
        assert_eq!(critical_counts(&r), [items], "{compiler}: {:#}", r["locks"]);
    }
}

/// A plugin that uses OpenMP, closed and opened again: libgomp is unloaded with it and comes back
/// at another address. The hooks kept the first copy's functions and jumped into unmapped memory
/// (the program crashed under stallscope, and ran alone); now an unloaded runtime's functions are
/// found again, and every round's critical sections are counted.
#[test]
fn a_runtime_unloaded_and_loaded_again_elsewhere_is_followed() {
    let (rounds, items) = (4u64, 1000u64);
    let dir = TempDir::new("openmp-reload");
    let plugin = build_omp_library(&dir, "reload_plugin.c", "libreload_plugin.so", "cc");
    let args = [
        plugin.display().to_string(),
        rounds.to_string(),
        items.to_string(),
    ];
    // One thread: libgomp's pool would run its code while it is unloaded (reload_plugin.c).
    let (plain, run, r) = loader_runs(&dir, "reload_main.c", &args, &[("OMP_NUM_THREADS", "1")]);
    assert_eq!(
        plain.matches(" moved").count() as u64,
        rounds - 1,
        "libgomp did not come back elsewhere, the test shows nothing: {plain}"
    );
    let strip = |s: &str| s.replace(" moved", "");
    assert_eq!(strip(&run), strip(&plain), "the program's results changed");
    assert_eq!(
        critical_counts(&r),
        [rounds * items, rounds * items],
        "{:#}",
        r["locks"]
    );
}

/// A plugin built against its own copy of libgomp, renamed as Python wheels bundle it
/// (auditwheel), in `dir`: the plugin's path.
fn plugin_with_bundled_libgomp(dir: &Path, hash: &str) -> PathBuf {
    let libs = dir.join(format!("libs-{hash}"));
    std::fs::create_dir_all(&libs).unwrap();
    let gomp = Command::new("cc")
        .args(["-print-file-name=libgomp.so.1"])
        .output()
        .expect("running cc");
    let gomp = PathBuf::from(String::from_utf8_lossy(&gomp.stdout).trim());
    let soname = format!("libgomp-{hash}.so.1");
    let bundled = libs.join(&soname);
    std::fs::copy(&gomp, &bundled).unwrap_or_else(|e| panic!("copying {}: {e}", gomp.display()));
    let status = Command::new("patchelf")
        .arg("--set-soname")
        .arg(&soname)
        .arg(&bundled)
        .status()
        .expect("running patchelf (Debian package patchelf)");
    assert!(status.success(), "patchelf failed");
    let plugin = dir.join(format!("libplugin-{hash}.so"));
    let obj = dir.join(format!("plugin-{hash}.o"));
    let source = test_source("omp_programs", "reload_plugin.c");
    let compile: Vec<String> = vec![
        "-O2".into(),
        "-fopenmp".into(),
        "-fPIC".into(),
        "-c".into(),
        source.display().to_string(),
        "-o".into(),
        obj.display().to_string(),
    ];
    let link: Vec<String> = vec![
        "-shared".into(),
        "-o".into(),
        plugin.display().to_string(),
        obj.display().to_string(),
        format!("-L{}", libs.display()),
        format!("-l:{soname}"),
        format!("-Wl,-rpath,{}", libs.display()),
    ];
    for args in [compile, link] {
        let out = Command::new("cc").args(&args).output().expect("running cc");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let needed = Command::new("readelf")
        .arg("-d")
        .arg(&plugin)
        .output()
        .expect("running readelf");
    let needed = String::from_utf8_lossy(&needed.stdout).into_owned();
    assert!(
        needed.contains(&soname) && !needed.contains("[libgomp.so.1]"),
        "the plugin must need its bundled copy alone: {needed}"
    );
    plugin
}

/// Runs bundled_main.c over `plugins` (each path, or `global:` and its path) with 2 OpenMP
/// threads, unprofiled and profiled: the same output; the profile's report.
fn profile_bundled(dir: &Path, items: u64, plugins: &[String]) -> Value {
    let mut args = vec![items.to_string()];
    args.extend(plugins.iter().cloned());
    let (plain, run, r) = loader_runs(dir, "bundled_main.c", &args, &[("OMP_NUM_THREADS", "2")]);
    assert_eq!(run, plain, "the program's results changed");
    r
}

/// The unnamed critical sections of one plugin's `plugin_tail(items / 10)` with 2 threads: one per
/// member of each region (each ends its body with a tail call of GOMP_critical_end).
fn tail_criticals(items: u64) -> u64 {
    items / 10 * 2
}

/// A plugin with its own copy of libgomp under another name, loaded with RTLD_LOCAL: how Python
/// wheels (PyTorch, scikit-learn) ship OpenMP and how Python loads them. The hooks looked the
/// runtime up in the global scope and by its usual file name, found neither, and called a null
/// function (SIGSEGV under stallscope; the program alone runs).
#[test]
fn a_renamed_libgomp_loaded_locally_as_python_wheels_bundle_it_is_found() {
    let items: u64 = 1000;
    let dir = TempDir::new("openmp-bundled");
    let plugin = plugin_with_bundled_libgomp(&dir, "5f3a9c1e");
    let r = profile_bundled(&dir, items, &[plugin.display().to_string()]);
    let mut counts = critical_counts(&r);
    counts.sort_unstable();
    assert_eq!(
        counts,
        [items, items + tail_criticals(items)],
        "{:#}",
        r["locks"]
    );
}

/// Two plugins, each with its own copy of libgomp (two extensions whose wheels bundle different
/// builds of it): each plugin's calls go to its own copy, as the dynamic linker binds them alone.
/// Sent to the first copy loaded, the second plugin's region ran in that copy's team while its
/// own omp_get_thread_num asked its own copy (no team: thread 0 of 1), and each thread computed
/// the whole loop: a wrong result, silently. A body that ends with a critical section leaves it
/// by a tail call, whose return address is the trampoline's: it is the body's own copy's too.
#[test]
fn two_plugins_with_their_own_libgomp_copies_each_call_their_own() {
    let items: u64 = 1000;
    let dir = TempDir::new("openmp-bundled-two");
    let plugins = [
        plugin_with_bundled_libgomp(&dir, "5f3a9c1e"),
        plugin_with_bundled_libgomp(&dir, "a71c00d4"),
    ];
    let paths: Vec<String> = plugins.iter().map(|p| p.display().to_string()).collect();
    let r = profile_bundled(&dir, items, &paths);
    // Each plugin's named section is its own program variable; the unnamed one is one entry for
    // both copies (the report's unnamed critical section).
    let mut counts = critical_counts(&r);
    counts.sort_unstable();
    let unnamed = 2 * (items + tail_criticals(items));
    assert_eq!(counts, [items, items, unnamed], "{:#}", r["locks"]);
}

/// The same two plugins, the first opened with RTLD_GLOBAL (as Python's
/// `sys.setdlopenflags(RTLD_GLOBAL)` or ctypes' `mode=RTLD_GLOBAL` open a library): its libgomp
/// copy joins the global scope, so the dynamic linker binds the second plugin's calls to it too.
/// The hooks sent the second plugin's regions to its own copy while its own omp_get_thread_num
/// went to the global one, and each thread computed the whole loop. The caller's bound imports
/// now say which copy its calls go to.
#[test]
fn a_plugin_whose_runtime_another_made_global_calls_the_global_copy() {
    let items: u64 = 1000;
    let dir = TempDir::new("openmp-bundled-global");
    let first = plugin_with_bundled_libgomp(&dir, "5f3a9c1e");
    let second = plugin_with_bundled_libgomp(&dir, "a71c00d4");
    let paths = [
        format!("global:{}", first.display()),
        second.display().to_string(),
    ];
    let r = profile_bundled(&dir, items, &paths);
    // The named section's variable (a global symbol of each plugin) is the first plugin's for
    // both, as the dynamic linker binds it: one section.
    let mut counts = critical_counts(&r);
    counts.sort_unstable();
    let unnamed = 2 * (items + tail_criticals(items));
    assert_eq!(counts, [2 * items, unnamed], "{:#}", r["locks"]);
}

#[test]
fn the_exports_never_show_stallscopes_own_trampolines() {
    // The interposer wraps main and every region's body (ss_main_wrapper, ss_omp_body): its own
    // code between the program's frames, which the flame graphs and exports leave out.
    let dir = TempDir::new("openmp-own-frames");
    let exe = build_with(&dir, "imbalanced_static.c", "cc");
    let cmd = [exe.display().to_string(), "4000".into(), "4".into()];
    let (_, prof) = profile_with(&dir, "omp.prof", &["-q"], &cmd, 0, |c| {
        c.env("OMP_NUM_THREADS", "2");
    });
    let prof = prof.display().to_string();
    for weight in ["cpu", "wall"] {
        let folded = String::from_utf8(stallscope_in_repo(&[
            "export",
            "--format",
            "collapsed",
            "--weight",
            weight,
            &prof,
        ]))
        .unwrap();
        assert!(folded.contains("main._omp_fn.0"), "{folded}");
        assert!(!folded.contains("ss_"), "{weight}: {folded}");
    }
    let speedscope = String::from_utf8(stallscope_in_repo(&[
        "export",
        "--format",
        "speedscope",
        &prof,
    ]))
    .unwrap();
    assert!(speedscope.contains("main._omp_fn.0") && !speedscope.contains("\"ss_"));
}
