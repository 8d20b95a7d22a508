//! Allocator accounting of `stallscope run` on programs whose allocations are known exactly.
//! Each program also runs in an "empty" mode (same binary, same threads, no allocations) that
//! measures what the C runtime allocates by itself; the report must equal known + baseline.

mod common;

use common::*;
use serde_json::Value;

/// What each of the two workers of tests/programs/alloc_known.c does: (calls, bytes) per function.
fn alloc_known_per_worker(function: &str) -> (u64, u64) {
    match function {
        "malloc" => (10_000 + 3_000, 10_000 * 24 + 3_000 * 16),
        "calloc" => (5_000, 5_000 * 32),
        "realloc" => (3_000, 3_000 * 100),
        "aligned" => (2_000 + 1_000, 2_000 * 48 + 1_000 * 128),
        "free" => (10_000 + 5_000 + 3_000 + 2_000 + 1_000, 0),
        _ => unreachable!(),
    }
}

fn baseline_and_known(dir: &TempDir, source: &str, run_args: &[&str]) -> (Value, Value) {
    let exe = compile(dir.path(), source, &[]);
    let (_, empty) = profile(
        dir.path(),
        "empty.prof",
        run_args,
        &[exe.as_os_str(), "empty".as_ref()],
        0,
    );
    let (out, known) = profile(dir.path(), "known.prof", run_args, &[exe.as_os_str()], 0);
    assert!(
        out.stdout.is_empty(),
        "the program prints nothing\n{}",
        describe(&out)
    );
    (report_json(&empty), report_json(&known))
}

#[test]
fn known_allocations_are_counted_exactly_per_function() {
    let dir = TempDir::new("alloc-known");
    let (base, report) = baseline_and_known(&dir, "alloc_known.c", &[]);
    for function in FUNCTIONS {
        let (calls, bytes) = alloc_known_per_worker(function);
        let b = fn_stats(&base, function);
        let r = fn_stats(&report, function);
        assert_eq!(
            r.calls,
            b.calls + 2 * calls,
            "{function} calls: report {r:?}, C runtime baseline {b:?}, known {}",
            2 * calls
        );
        assert_eq!(
            r.bytes,
            b.bytes + 2 * bytes,
            "{function} bytes: report {r:?}, baseline {b:?}, known {}",
            2 * bytes
        );
    }
    if let Some(total) = report["alloc"]["total_calls"].as_u64() {
        let sum: u64 = FUNCTIONS.iter().map(|f| fn_stats(&report, f).calls).sum();
        let allocs = allocation_calls(&report);
        assert!(
            total == sum || total == allocs,
            "alloc.total_calls {total} is neither the sum of all calls ({sum}) nor of allocations ({allocs})"
        );
    }

    // The size histogram: 20000 malloc(24) land in the 17..24 bucket, 10000 calloc(4, 8) in 25..32.
    let hist = report["alloc"]["size_histogram"]
        .as_array()
        .expect("alloc.size_histogram");
    let bucket = |size: u64| -> u64 {
        hist.iter()
            .filter(|b| num(b, &["min_bytes"]) <= size && size <= num(b, &["max_bytes"]))
            .map(|b| num(b, &["count"]))
            .sum()
    };
    let b24 = hist
        .iter()
        .find(|b| num(b, &["min_bytes"]) <= 24 && 24 <= num(b, &["max_bytes"]))
        .expect("a size bucket holding 24 bytes");
    assert!(
        num(b24, &["min_bytes"]) >= 17 && num(b24, &["max_bytes"]) <= 24,
        "the bucket of 24 bytes should be 17..24: {b24}"
    );
    assert!(
        bucket(24) >= 20_000,
        "17..24 byte bucket holds {} (< 20000): {b24}",
        bucket(24)
    );
    assert!(
        bucket(32) >= 10_000,
        "the bucket of 32 bytes holds {} (< 10000)",
        bucket(32)
    );
    // Every allocation (not free) is in exactly one bucket.
    assert_eq!(
        histogram_total(&report["alloc"]["size_histogram"]),
        allocation_calls(&report),
        "size histogram total vs allocation calls"
    );

    // Three threads: main and two workers (the profiler's own flusher thread must not appear),
    // with the names the workers gave themselves.
    let threads = report["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 3, "threads: {threads:?}");
    let mut names: Vec<&str> = threads.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort();
    assert_eq!(names, ["alloc-a", "alloc-b", "alloc_known"], "thread names");
}

/// The calls whose duration was measured: the report's extra `timed_calls` key.
fn timed_calls(report: &Value, function: &str) -> u64 {
    num(&report["alloc"]["functions"][function], &["timed_calls"])
}

#[test]
fn sampled_timing_times_about_one_call_in_32() {
    let dir = TempDir::new("alloc-sampled");
    let exe = compile(dir.path(), "alloc_known.c", &[]);
    let (_, path) = profile(
        dir.path(),
        "sampled.prof",
        &["--timing-period", "32"],
        &[&exe],
        0,
    );
    let report = report_json(&path);
    assert_eq!(report["timing"]["mode"], "sampled", "default timing mode");
    assert_eq!(report["timing"]["period"], 32, "{}", report["timing"]);
    for function in FUNCTIONS {
        let stats = fn_stats(&report, function);
        let timed = timed_calls(&report, function);
        // Intervals between timed calls are uniform on [1, 63]: about calls/32 are timed.
        assert!(
            timed >= stats.calls / 64 && timed <= stats.calls / 16,
            "{function}: {timed} of {} calls timed, expected about {}",
            stats.calls,
            stats.calls / 32
        );
        assert!(stats.time_ns > 0, "{function} has no time: {stats:?}");
        // The latency histogram estimates all calls from the sample (each timed call weighted by
        // the calls it stands for): its total is within a few percent of the exact count. About
        // calls/32 samples with intervals uniform on [1, 63] give a relative standard deviation
        // of about sqrt(10/calls); 20% is more than 4 of them even for the 6000 aligned calls.
        let hist = &report["alloc"]["latency_histogram"][function];
        let total = histogram_total(hist);
        assert!(
            total.abs_diff(stats.calls) * 5 <= stats.calls,
            "{function}: latency histogram holds {total}, calls {}: {hist}",
            stats.calls
        );
    }
}

#[test]
fn default_timing_times_about_one_call_in_256() {
    let dir = TempDir::new("alloc-sampled-default");
    let exe = compile(dir.path(), "alloc_known.c", &[]);
    let (_, path) = profile(dir.path(), "default.prof", &[], &[&exe], 0);
    let report = report_json(&path);
    assert_eq!(report["timing"]["mode"], "sampled", "default timing mode");
    assert_eq!(report["timing"]["period"], 256, "{}", report["timing"]);
    assert_eq!(report["timing"]["lock_period"], 256, "{}", report["timing"]);
    for function in FUNCTIONS {
        let stats = fn_stats(&report, function);
        let timed = timed_calls(&report, function);
        // Intervals uniform on [1, 511]: about calls/256 timed; for the 6000 aligned calls
        // (alternating with frees, one thread's countdown shared by both) 23, with a standard
        // deviation of about 4: a third of it is more than 3.5 of them below.
        assert!(
            timed >= stats.calls / 768 && timed <= stats.calls / 96,
            "{function}: {timed} of {} calls timed, expected about {}",
            stats.calls,
            stats.calls / 256
        );
        assert!(stats.time_ns > 0, "{function} has no time: {stats:?}");
        // The histogram's total estimates the calls (each timed call weighted by 256) with a
        // relative standard deviation of about 17% for the 6000 aligned calls: within a factor
        // of 3 is 4 of them, and a wrong weight (32, or 1) is far outside.
        let hist = &report["alloc"]["latency_histogram"][function];
        let total = histogram_total(hist);
        assert!(
            total * 3 >= stats.calls && total <= stats.calls * 3,
            "{function}: latency histogram holds {total}, calls {}: {hist}",
            stats.calls
        );
    }
}

#[test]
fn short_streams_of_many_sizes_are_timed_one_call_in_256() {
    // Small mallocs are counted and timed per request size (a countdown of their own each): 999
    // sizes of 32 calls each, every stream far shorter than the 256 calls between timed ones.
    // Each call is timed with probability 1/256 only if a stream's first interval is the rest of
    // an interval under way; drawn as a whole interval (uniform on [1, 511]) a stream of 32 calls
    // would be timed with probability 32/511, half as often: about 62 of the 31968 calls.
    let dir = TempDir::new("alloc-many-sizes");
    let exe = compile(dir.path(), "alloc_many_sizes.c", &[]);
    let (_, path) = profile(dir.path(), "sizes.prof", &[], &[&exe], 0);
    let report = report_json(&path);
    let stats = fn_stats(&report, "malloc");
    assert!(
        stats.calls >= 999 * 32,
        "every malloc counted: {} calls",
        stats.calls
    );
    let timed = timed_calls(&report, "malloc");
    // Expected 31968 / 256 = 125 (standard deviation about 11): 85 and 170 are 3.6 and 4 of them
    // away, and the biased draw's 62 (deviation 8) is 2.9 of its own below 85.
    assert!(
        (85..=170).contains(&timed),
        "{timed} of {} mallocs timed, expected about {}",
        stats.calls,
        stats.calls / 256
    );
    // Sizes 1..999 each 32 times: the bytes follow from the sizes.
    assert!(
        stats.bytes >= 32 * 999 * 1000 / 2,
        "bytes {} below the requests' {}",
        stats.bytes,
        32 * 999 * 1000 / 2
    );
}

#[test]
fn exact_timing_counts_the_same_and_times_every_call() {
    let dir = TempDir::new("alloc-exact");
    let (base, report) = baseline_and_known(&dir, "alloc_known.c", &["--timing", "exact"]);
    assert_eq!(report["timing"]["mode"], "exact");
    for function in FUNCTIONS {
        let (calls, _) = alloc_known_per_worker(function);
        let r = fn_stats(&report, function);
        assert_eq!(
            r.calls,
            fn_stats(&base, function).calls + 2 * calls,
            "{function} calls"
        );
        assert_eq!(
            timed_calls(&report, function),
            r.calls,
            "{function}: every call is timed"
        );
        let timed = histogram_total(&report["alloc"]["latency_histogram"][function]);
        assert_eq!(
            timed, r.calls,
            "{function}: the latency histogram holds every call"
        );
        assert!(r.time_ns > 0, "{function} has no time: {r:?}");
    }
    // The individual aligned functions: 2 x 2000 posix_memalign and 2 x 1000 aligned_alloc.
    let by = |r: &Value, f: &str| num(&r["alloc"]["by_function"][f], &["calls"]);
    assert_eq!(
        by(&report, "posix_memalign"),
        by(&base, "posix_memalign") + 4_000
    );
    assert_eq!(
        by(&report, "aligned_alloc"),
        by(&base, "aligned_alloc") + 2_000
    );
    // Thread time in the allocator: the two workers spent some, and never more than their wall time.
    let threads = report["threads"].as_array().expect("threads");
    let busy: Vec<&Value> = threads
        .iter()
        .filter(|t| num(t, &["alloc_ns"]) > 0)
        .collect();
    assert!(
        busy.len() >= 2,
        "at least the two workers have alloc_ns > 0: {threads:?}"
    );
    for t in threads {
        assert!(
            num(t, &["alloc_ns"]) <= num(t, &["wall_ns"]),
            "a thread spent longer in the allocator than it lived: {t}"
        );
    }
}

#[test]
fn five_hundred_short_lived_threads() {
    let dir = TempDir::new("alloc-threads");
    let (base, report) = baseline_and_known(&dir, "many_threads.c", &[]);
    // Short threads beyond the first few dozen are folded into one record per name
    // (docs/FORMAT.md, "Bounds"): every thread is still counted, and so are its calls.
    let count = |r: &Value| -> u64 {
        r["threads"]
            .as_array()
            .expect("threads")
            .iter()
            .map(|t| t["folded_threads"].as_u64().unwrap_or(1))
            .sum()
    };
    assert_eq!(count(&report), 501, "500 workers and main");
    assert_eq!(count(&base), 501, "500 workers and main (empty run)");
    assert!(
        report["threads"].as_array().expect("threads").len() < 200,
        "most short threads are folded"
    );
    for (function, calls, bytes) in [
        ("malloc", 500 * 100, 500 * 100 * 40),
        ("free", 500 * 100, 0),
    ] {
        let b = fn_stats(&base, function);
        let r = fn_stats(&report, function);
        assert_eq!(
            r.calls,
            b.calls + calls,
            "{function}: report {r:?}, baseline {b:?}"
        );
        assert_eq!(
            r.bytes,
            b.bytes + bytes,
            "{function}: report {r:?}, baseline {b:?}"
        );
    }
    for function in ["calloc", "realloc", "aligned"] {
        assert_eq!(
            fn_stats(&report, function).calls,
            fn_stats(&base, function).calls,
            "{function}"
        );
    }
}

#[test]
fn cxx_new_delete_and_std_mutex() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("alloc-cxx");
    let exe = compile(dir.path(), "cxx_threads.cpp", &[]);
    let (_, empty) = profile(
        dir.path(),
        "empty.prof",
        &[],
        &[exe.as_os_str(), "empty".as_ref()],
        0,
    );
    let (out, known) = profile(dir.path(), "known.prof", &[], &[exe.as_os_str()], 0);
    let base = report_json(&empty);
    let report = report_json(&known);
    // Two threads, each exactly 10000 `new int[6]` + `delete[]` and 50000 lock_guard on one
    // std::mutex (see the program).
    let b = fn_stats(&base, "malloc");
    let r = fn_stats(&report, "malloc");
    assert_eq!(
        r.calls,
        b.calls + 2 * 10_000,
        "operator new goes through malloc: {r:?} vs {b:?}"
    );
    assert_eq!(r.bytes, b.bytes + 2 * 10_000 * 24);
    assert_eq!(
        fn_stats(&report, "free").calls,
        fn_stats(&base, "free").calls + 2 * 10_000
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let address = stdout
        .split_whitespace()
        .nth(1)
        .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .unwrap_or_else(|| panic!("program output: {stdout}"));
    let lock = find_lock(&report, address)
        .unwrap_or_else(|| panic!("std::mutex {address:#x} not in locks: {}", report["locks"]));
    assert_eq!(num(lock, &["acquisitions"]), 2 * 50_000, "{lock}");
}

#[test]
fn rarer_entry_points_are_grouped_and_counted_once() {
    let dir = TempDir::new("alloc-edge");
    let (base, report) = baseline_and_known(&dir, "alloc_edge.c", &[]);
    let delta = |f: &str| {
        let (r, b) = (fn_stats(&report, f), fn_stats(&base, f));
        (r.calls - b.calls, r.bytes - b.bytes)
    };
    let by = |f: &str| {
        num(&report["alloc"]["by_function"][f], &["calls"])
            - num(&base["alloc"]["by_function"][f], &["calls"])
    };
    // memalign, valloc and pvalloc are "aligned" (requested sizes, not rounded ones).
    assert_eq!(
        delta("aligned"),
        (15, 7 * 100 + 5 * 200 + 3 * 300),
        "aligned"
    );
    assert_eq!((by("memalign"), by("valloc"), by("pvalloc")), (7, 5, 3));
    // 11 reallocarray(p, 10, 12) and 13 realloc(NULL, 50) are "realloc", each counted once
    // (glibc's reallocarray calls realloc itself: that inner call is not the program's).
    assert_eq!(
        (by("reallocarray"), by("realloc")),
        (11, 13),
        "by_function: {}",
        report["alloc"]["by_function"]
    );
    assert_eq!(delta("realloc"), (24, 11 * 120 + 13 * 50), "realloc group");
    assert_eq!(
        delta("malloc"),
        (11, 11 * 8),
        "malloc: the reallocarray sources only"
    );
    // free(NULL) is a call too: 7 + 5 + 3 + 11 + 13 frees of blocks and 17 of NULL.
    assert_eq!(delta("free"), (56, 0), "free");
    assert_eq!(delta("calloc"), (0, 0));
}

#[test]
fn counts_stay_exact_with_a_preloaded_jemalloc() {
    // The user's own LD_PRELOAD (another allocator) is kept, and the interposer forwards to it.
    let jemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    if !have_file(&[jemalloc], "libjemalloc2") {
        return;
    }
    let dir = TempDir::new("alloc-jemalloc");
    let exe = compile(dir.path(), "alloc_known.c", &[]);
    let with_jemalloc = |c: &mut std::process::Command| {
        c.env("LD_PRELOAD", jemalloc);
    };
    let runs = [("empty.prof", Some("empty")), ("known.prof", None)];
    let reports: Vec<Value> = runs
        .iter()
        .map(|(name, arg)| {
            let mut cmd = vec![exe.as_os_str()];
            cmd.extend(arg.map(std::ffi::OsStr::new));
            let (_, path) = profile_with(dir.path(), name, &[], &cmd, 0, with_jemalloc);
            report_json(&path)
        })
        .collect();
    let (base, report) = (&reports[0], &reports[1]);
    for r in [base, report] {
        assert!(
            r["allocator"]
                .as_str()
                .is_some_and(|a| a.contains("jemalloc")),
            "the allocator behind malloc is jemalloc: {}",
            r["allocator"]
        );
    }
    for function in FUNCTIONS {
        let (calls, bytes) = alloc_known_per_worker(function);
        let (b, r) = (fn_stats(base, function), fn_stats(report, function));
        assert_eq!(
            (r.calls, r.bytes),
            (b.calls + 2 * calls, b.bytes + 2 * bytes),
            "{function}: {r:?} vs baseline {b:?}"
        );
    }
}

/// Weighted timed calls (`timed_calls` counts a call timed at the longer period 16 times) against
/// the calls they estimate: within 10% of one in 256.
fn assert_one_in_256(report: &Value, function: &str, what: &str) {
    let stats = fn_stats(report, function);
    let timed = timed_calls(report, function);
    assert!(
        timed.abs_diff(stats.calls / 256) * 10 <= stats.calls / 256,
        "{what}: {timed} timed calls (weighted) for {} {function} calls, expected about {}",
        stats.calls,
        stats.calls / 256
    );
    let total = histogram_total(&report["alloc"]["latency_histogram"][function]);
    assert!(
        total.abs_diff(stats.calls) * 10 <= stats.calls,
        "{what}: the {function} latency histogram holds {total} calls of {}",
        stats.calls
    );
}

#[test]
fn a_long_stream_is_timed_at_the_longer_period_and_a_phase_at_the_default_one() {
    // 3.4 million malloc/free pairs in one thread: after 2048 timed calls of a function (about
    // 524,000 calls) the default period of 256 becomes 4096 for it, each call timed then counting
    // 16 times, so every estimate stays that of one call in 256. The four phases that follow
    // begin at 256 again: each has about 390 timed mallocs, all of weight 1, where without the
    // restart it would have about 24 of weight 16 (a multiple of 16, as all four would be).
    let dir = TempDir::new("alloc-long-stream");
    let exe = compile(dir.path(), "alloc_long_stream.c", &[&include_flag()]);
    let (_, path) = profile(dir.path(), "long.prof", &[], &[&exe], 0);
    let report = report_json(&path);
    assert_eq!(report["timing"]["period"], 256, "{}", report["timing"]);
    assert_eq!(
        report["timing"]["longer_period"], 4096,
        "{}",
        report["timing"]
    );
    assert!(fn_stats(&report, "malloc").calls >= 3_400_000);
    let text = std::process::Command::new(stallscope())
        .arg("report")
        .arg(&path)
        .output()
        .expect("running stallscope report");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("1-in-256 sample of calls, 1-in-4,096 for a function once a thread"),
        "the report names both periods:\n{text}"
    );
    for function in ["malloc", "free"] {
        assert_one_in_256(&report, function, "the longer period");
    }
    // Stacks are taken on one timed call in 4 whatever its period, weighted by it: the sites'
    // estimated calls add up to the mallocs (some 660 stacks, 150 of weight 16: within 25%).
    let malloc_calls = fn_stats(&report, "malloc").calls;
    let site_calls: u64 = report["alloc"]["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .filter(|s| s["function"] == "malloc")
        .map(|s| num(s, &["calls"]))
        .sum();
    assert!(
        site_calls.abs_diff(malloc_calls) * 4 <= malloc_calls,
        "the malloc sites estimate {site_calls} calls of {malloc_calls}"
    );
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 4, "{}", report["phases"]);
    let timed: Vec<u64> = phases
        .iter()
        .map(|p| num(&p["alloc"]["functions"]["malloc"], &["timed_calls"]))
        .collect();
    for (p, &t) in phases.iter().zip(&timed) {
        let calls = num(&p["alloc"]["functions"]["malloc"], &["calls"]);
        assert!(
            (calls / 400..=calls / 180).contains(&t),
            "phase {}: {t} timed of {calls} mallocs, expected about {}",
            p["name"],
            calls / 256
        );
    }
    assert!(
        timed.iter().any(|t| t % 16 != 0),
        "every phase's timed mallocs a multiple of 16 ({timed:?}): the phases kept the longer period"
    );

    // A period given is kept throughout: the same program, `--timing-period 256`.
    let (_, path) = profile(
        dir.path(),
        "given.prof",
        &["--timing-period", "256"],
        &[&exe],
        0,
    );
    let report = report_json(&path);
    assert_eq!(
        report["timing"]["longer_period"], 256,
        "{}",
        report["timing"]
    );
    for function in ["malloc", "free"] {
        assert_one_in_256(&report, function, "a period given");
    }
}
