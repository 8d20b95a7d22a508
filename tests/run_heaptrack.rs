//! stallscope and heaptrack must agree on how many allocations a program makes, and on their
//! sizes.
//!
//! What heaptrack counts ("calls to allocation functions" of heaptrack_print): every call that
//! returns memory, i.e. malloc, calloc, realloc (one allocation each; the old block's release is
//! not a call) and the aligned functions; never free. That is stallscope's
//! malloc + calloc + realloc + aligned. heaptrack_print -H writes the same calls by requested
//! size (realloc by its new size, calloc by n * size), which must fall into stallscope's size
//! buckets identically.
//!
//! The one documented difference: heaptrack's own preload library is C++, so for a C program it
//! brings libstdc++ into the process, and libstdc++'s start-up allocates its emergency exception
//! pool (one malloc of about 70 KiB). heaptrack counts it; under stallscope a C program never
//! loads libstdc++, so that allocation does not happen at all. The test identifies it in
//! heaptrack's report (an allocation site in libstdc++.so) and allows exactly that. For a C++
//! program both see the pool, and the counts must be equal with no allowance.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Heaptrack {
    total: u64,
    /// Calls from allocation sites whose top frames are in libstdc++.so.
    libstdcxx: u64,
    /// Requested size -> number of allocations.
    sizes: BTreeMap<u64, u64>,
}

fn heaptrack(dir: &Path, name: &str, cmd: &[&OsStr]) -> Heaptrack {
    let prefix = dir.join(name);
    let out = Command::new("heaptrack")
        .arg("-o")
        .arg(&prefix)
        .args(cmd)
        .current_dir(dir)
        .output()
        .expect("running heaptrack");
    assert!(out.status.success(), "heaptrack failed\n{}", describe(&out));
    let data: PathBuf = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let f = p.file_name().unwrap().to_string_lossy();
            f.starts_with(&format!("{name}.")) && !f.ends_with(".txt")
        })
        .unwrap_or_else(|| {
            panic!(
                "no heaptrack data file {}.*\n{}",
                prefix.display(),
                describe(&out)
            )
        });
    let hist = dir.join(format!("{name}-sizes.txt"));
    let out = Command::new("heaptrack_print")
        .arg("-f")
        .arg(&data)
        .args([
            "-p", "0", "-T", "0", "-a", "1", "-n", "1000", "-s", "1000", "-H",
        ])
        .arg(&hist)
        .output()
        .expect("running heaptrack_print");
    assert!(
        out.status.success(),
        "heaptrack_print failed\n{}",
        describe(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let total = text
        .lines()
        .find_map(|l| l.strip_prefix("calls to allocation functions: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total in heaptrack_print output:\n{text}"));

    // Top-level allocation sites: "N calls to allocation functions with ... from", then the
    // site's frames, until the first indented "M calls with ..." of its merged backtraces.
    let mut libstdcxx = 0;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some((n, _)) = line.split_once(" calls to allocation functions with ") else {
            continue;
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        let mut frames = lines[i + 1..]
            .iter()
            .take_while(|l| !l.is_empty() && !l.contains(" calls with "));
        if frames.any(|l| l.contains("libstdc++.so")) {
            libstdcxx += n;
        }
    }

    let sizes = std::fs::read_to_string(&hist)
        .unwrap_or_else(|e| panic!("reading {}: {e}", hist.display()))
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    Heaptrack {
        total,
        libstdcxx,
        sizes,
    }
}

fn stallscope_report(dir: &Path, name: &str, cmd: &[&OsStr]) -> Value {
    let (_, path) = profile(dir, name, &[], cmd, 0);
    report_json(&path)
}

/// heaptrack's allocations per stallscope size bucket, minus stallscope's: (min, max, difference).
fn size_differences(h: &Heaptrack, report: &Value) -> Vec<(u64, u64, i64)> {
    let buckets = report["alloc"]["size_histogram"]
        .as_array()
        .expect("size_histogram");
    let ranges: Vec<(u64, u64)> = buckets
        .iter()
        .map(|b| (num(b, &["min_bytes"]), num(b, &["max_bytes"])))
        .collect();
    let mut diffs = Vec::new();
    for (b, &(lo, hi)) in buckets.iter().zip(&ranges) {
        let theirs: u64 = h.sizes.range(lo..=hi).map(|(_, c)| c).sum();
        let d = theirs as i64 - num(b, &["count"]) as i64;
        if d != 0 {
            diffs.push((lo, hi, d));
        }
    }
    // Sizes heaptrack saw that fall in no bucket stallscope lists (it lists non-empty ones only).
    for (&size, &count) in &h.sizes {
        if !ranges.iter().any(|&(lo, hi)| lo <= size && size <= hi) {
            diffs.push((size, size, count as i64));
        }
    }
    diffs
}

fn compare_program(source: &str, links_libstdcxx: bool, known: u64) {
    if !have_tool("heaptrack", &["--version"], "heaptrack")
        || !have_tool("heaptrack_print", &["--version"], "heaptrack")
        || (source.ends_with(".cpp") && !have_cxx())
    {
        return;
    }
    let dir = TempDir::new("heaptrack");
    let exe = compile(dir.path(), source, &[]);
    let empty_args = [exe.as_os_str(), OsStr::new("empty")];
    let known_args = [exe.as_os_str()];
    let runs = [("empty", &empty_args[..]), ("known", &known_args[..])];
    let mut totals = Vec::new();
    for (name, cmd) in runs {
        let h = heaptrack(dir.path(), &format!("heaptrack-{name}"), cmd);
        let report = stallscope_report(dir.path(), &format!("{name}.prof"), cmd);
        let ours = allocation_calls(&report);
        // Only heaptrack's own libstdc++ start-up allocation may differ, and only for a C program.
        let allowance = if links_libstdcxx { 0 } else { h.libstdcxx };
        assert!(
            allowance <= 1,
            "{source} {name}: heaptrack saw {allowance} libstdc++ start-up allocations"
        );
        assert_eq!(
            ours + allowance,
            h.total,
            "{source} {name}: stallscope counted {ours} allocation calls ({:?}), heaptrack {} \
             (of which {allowance} from libstdc++ start-up, which stallscope cannot see); heaptrack sizes: {:?}",
            ["malloc", "calloc", "realloc", "aligned"].map(|f| fn_stats(&report, f).calls),
            h.total,
            h.sizes
        );
        // The same calls by size: the only difference is that start-up allocation (tens of KiB).
        let diffs = size_differences(&h, &report);
        let extra: i64 = diffs.iter().map(|d| d.2).sum();
        assert_eq!(
            extra, allowance as i64,
            "{source} {name}: size buckets differ: {diffs:?}"
        );
        assert!(
            diffs.iter().all(|&(lo, _, d)| d > 0 && lo >= 1024),
            "{source} {name}: per-size differences (heaptrack - stallscope) other than the libstdc++ pool: \
             {diffs:?}\nheaptrack sizes: {:?}",
            h.sizes
        );
        totals.push((h.total, ours));
    }
    // And the program's own allocations, above the C runtime's, are the known number for both.
    assert_eq!(totals[1].0 - totals[0].0, known, "heaptrack: known - empty");
    assert_eq!(
        totals[1].1 - totals[0].1,
        known,
        "stallscope: known - empty"
    );
}

#[test]
fn allocation_counts_agree_with_heaptrack_for_c() {
    // 2 threads x (13000 malloc + 5000 calloc + 3000 realloc + 3000 aligned).
    compare_program("alloc_known.c", false, 48_000);
}

#[test]
fn allocation_counts_agree_with_heaptrack_for_cxx() {
    // 2 threads x 10000 operator new.
    compare_program("cxx_threads.cpp", true, 20_000);
}
