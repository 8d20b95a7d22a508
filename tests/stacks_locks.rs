//! Stacks of contended lock acquisitions: the waiter's stack (where it blocked) and the holder's
//! (where it released the lock while others waited), named by function and line in the report.

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn source(name: &str) -> PathBuf {
    common::test_source("stack_programs", name)
}

fn mark_line(name: &str) -> u64 {
    let needle = format!("// MARK {name}");
    std::fs::read_to_string(source("lock_sites.c"))
        .unwrap()
        .lines()
        .position(|l| l.ends_with(&needle))
        .unwrap() as u64
        + 1
}

fn user(site: &Value) -> &Value {
    &site["frames"][site["user_frame"].as_u64().unwrap() as usize]
}

#[test]
fn waiter_and_holder_stacks_of_a_contended_mutex() {
    let dir = common::TempDir::new("stacks-locks");
    let exe = dir.join("lock_sites");
    let out = Command::new("cc")
        .args(["-O1", "-g", "-pthread"])
        .arg(source("lock_sites.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, prof) = common::profile(&dir, "locks.prof", &["-q"], &[&exe], 0);
    let report = common::report_json(&prof);
    let lock = &report["locks"][0];
    assert!(lock["contended"].as_u64().unwrap() > 0, "{lock:#}");

    let sites = lock["sites"].as_array().unwrap();
    let waiter = sites
        .iter()
        .find(|s| user(s)["function"] == "take_briefly")
        .unwrap_or_else(|| panic!("no waiter site in take_briefly: {lock:#}"));
    assert_eq!(
        user(waiter)["line"].as_u64(),
        Some(mark_line("waiter_lock"))
    );
    assert!(
        user(waiter)["file"]
            .as_str()
            .unwrap()
            .ends_with("lock_sites.c")
    );
    // The estimates are the lock's exact totals shared out by the samples.
    let contended: u64 = sites.iter().map(|s| s["contended"].as_u64().unwrap()).sum();
    let wait: u64 = sites.iter().map(|s| s["wait_ns"].as_u64().unwrap()).sum();
    assert!(contended.abs_diff(lock["contended"].as_u64().unwrap()) <= sites.len() as u64);
    assert!(wait.abs_diff(lock["wait_ns"].as_u64().unwrap()) <= sites.len() as u64);

    let holders = lock["holder_sites"].as_array().unwrap();
    let holder = holders
        .iter()
        .find(|s| user(s)["function"] == "hold_for_a_while")
        .unwrap_or_else(|| panic!("no holder site in hold_for_a_while: {lock:#}"));
    assert_eq!(
        user(holder)["line"].as_u64(),
        Some(mark_line("holder_unlock"))
    );
    let caller = &holder["frames"][holder["user_frame"].as_u64().unwrap() as usize + 1];
    assert_eq!(caller["function"], "slow_holder", "{holder:#}");
}
