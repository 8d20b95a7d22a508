//! `stallscope diff` on two real profiles of tests/golden/work.c run with different inputs
//! (twice the records, no buffers), and on a profile against itself.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// tests/golden/work.c, with the frame-pointer and include flags the golden profile was made with.
fn compile_work(dir: &TempDir) -> PathBuf {
    compile_file(
        dir.path(),
        &test_source("golden", "work.c"),
        &["-g", "-fno-omit-frame-pointer", &include_flag()],
    )
}

fn diff(args: &[&str], before: &Path, after: &Path) -> Vec<u8> {
    let out = Command::new(stallscope())
        .arg("diff")
        .args(args)
        .arg(before)
        .arg(after)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    out.stdout
}

fn ratio(v: &Value) -> f64 {
    v["ratio"]
        .as_f64()
        .unwrap_or_else(|| panic!("no ratio in {v}"))
}

fn find_site<'a>(list: &'a Value, function: &str) -> Option<&'a Value> {
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["site"].as_str().unwrap().starts_with(function))
}

#[test]
fn diff_of_two_inputs_shows_the_ratios() {
    let dir = TempDir::new("diff-runs");
    let exe = compile_work(&dir);
    let exe = exe.to_str().unwrap();
    let (_, before) = profile(dir.path(), "before.prof", &[], &[exe, "100000", "5000"], 0);
    let (_, after) = profile(dir.path(), "after.prof", &[], &[exe, "200000", "0"], 0);
    let d: Value = serde_json::from_slice(&diff(&["--json"], &before, &after)).unwrap();
    assert_eq!(d["schema"], "stallscope.diff/1");

    // Exact counts: 2 threads x (100000 + 5000) mallocs before, 2 x 200000 after (plus a few
    // from the C runtime).
    let malloc = &d["alloc"]["groups"]["malloc"];
    let (b, a) = (
        malloc["calls"]["before"].as_u64().unwrap(),
        malloc["calls"]["after"].as_u64().unwrap(),
    );
    assert!((210_000..210_100).contains(&b), "malloc calls before: {b}");
    assert!((400_000..400_100).contains(&a), "malloc calls after: {a}");
    let r = ratio(&malloc["calls"]);
    assert!((r - a as f64 / b as f64).abs() < 1e-9, "ratio {r}");
    assert!((1.89..1.92).contains(&r), "malloc calls ratio {r}");
    // Bytes: 5000 x 4 KiB buffers per thread vanished, records grew.
    let bytes = ratio(&malloc["bytes"]);
    assert!(bytes < 0.5, "malloc bytes ratio {bytes}");
    assert!(ratio(&d["alloc"]["groups"]["free"]["calls"]) > 1.8);
    assert!(d["wall_ns"]["before"].as_u64().unwrap() > 0);
    assert!(d["lock_wait_ns"]["after"].is_u64());

    // Sites: make_record changed (by about 2x; its calls are estimated from sampled stacks),
    // make_buffer vanished.
    let sites = &d["sites"];
    let record = find_site(&sites["changed"], "make_record")
        .unwrap_or_else(|| panic!("make_record not among changed sites: {sites}"));
    let rr = ratio(&record["calls"]);
    assert!((1.4..2.8).contains(&rr), "make_record calls ratio {rr}");
    assert!(
        record["site"].as_str().unwrap().contains("work.c:"),
        "{record}"
    );
    let buffer = find_site(&sites["vanished"], "make_buffer")
        .unwrap_or_else(|| panic!("make_buffer not among vanished sites: {sites}"));
    assert_eq!(buffer["calls"]["after"], 0);
    assert!(buffer["calls"]["ratio"].is_null() || buffer["calls"]["ratio"] == 0.0);
    assert!(find_site(&sites["appeared"], "make_record").is_none());

    // Thread shares: 3 threads in each, matched by name and order; the workers mostly on CPU.
    let each = d["threads"]["each"].as_array().unwrap();
    assert_eq!(each.len(), 3, "{each:?}");
    for t in each {
        for side in ["before", "after"] {
            for key in ["cpu", "allocator", "lock_wait"] {
                let v = t[side][key].as_f64().unwrap();
                assert!((0.0..=1.5).contains(&v), "{t}");
            }
        }
    }
    // The allocator's share comes from CPU samples: a short run may have none in it (the suite
    // once read 0), so only what a share must be is asserted here; the calls are exact above.
    let all = &d["threads"]["all"];
    for side in ["before", "after"] {
        let share = all[side]["allocator"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{side}: {all}");
    }

    let text = String::from_utf8(diff(&[], &before, &after)).unwrap();
    for needle in [
        "wall time",
        "malloc calls",
        "make_record",
        "make_buffer",
        "vanished",
        "all threads",
    ] {
        assert!(text.contains(needle), "no `{needle}` in\n{text}");
    }
}

#[test]
fn diff_of_a_profile_with_itself_is_all_ones() {
    let sample = repo_file("tests/golden/sample.prof");
    let d: Value = serde_json::from_slice(&diff(&["--json"], &sample, &sample)).unwrap();
    assert_eq!(ratio(&d["wall_ns"]), 1.0);
    assert_eq!(ratio(&d["alloc"]["calls"]), 1.0);
    assert_eq!(ratio(&d["lock_wait_ns"]), 1.0);
    assert!(d["sites"]["appeared"].as_array().unwrap().is_empty());
    assert!(d["sites"]["vanished"].as_array().unwrap().is_empty());
    let changed = d["sites"]["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 2, "{changed:?}");
    for s in changed {
        assert_eq!(ratio(&s["calls"]), 1.0);
        // Unsymbolized (the sample's modules are gone): matched by the whole stack.
        assert!(s["site"].as_str().unwrap().contains(";work+0x"), "{s}");
    }
}
