//! `stallscope bench --allocators`: the same command under each malloc.

mod common;

use common::{assert_success, bench_json, have_file, stallscope};
use std::process::Command;

const JEMALLOC: &str = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

#[test]
fn each_allocator_is_preloaded_into_the_run() {
    if !have_file(&[JEMALLOC], "libjemalloc2") {
        return;
    }
    // The command fails unless LD_PRELOAD is what the variant promises, so a wrong
    // environment makes stallscope exit with an error.
    let (json, _) = bench_json(
        "allocators",
        &[
            "--runs",
            "2",
            "--allocators",
            "glibc,jemalloc",
            r#"sh -c 'case "$LD_PRELOAD" in "") [ "$0" = x ];; *libjemalloc.so.2*) true;; *) false;; esac' x"#,
        ],
    );
    let variants = json["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 2);
    assert_eq!(variants[0]["name"], "glibc");
    assert_eq!(variants[1]["name"], "jemalloc");
    assert_eq!(variants[0]["failed_runs"], 0);
    assert!(
        variants[1]["command"]
            .as_str()
            .unwrap()
            .starts_with("LD_PRELOAD="),
        "{}",
        variants[1]
    );
}

#[test]
fn a_missing_allocator_names_the_package_to_install() {
    let output = Command::new(stallscope())
        .args([
            "bench",
            "--runs",
            "1",
            "--no-progress",
            "--allocators",
            "glibc,/nonexistent/libfoo.so",
            "true",
        ])
        .output()
        .unwrap();
    assert_success(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/libfoo.so"), "{stderr}");

    // (The Debian package named for a missing known allocator is unit-tested in
    // src/bench/allocators.rs, since this machine may have them all installed.)
    // Nothing left to measure is an error.
    let output = Command::new(stallscope())
        .args([
            "bench",
            "--runs",
            "1",
            "--no-progress",
            "--allocators",
            "/nonexistent/x.so",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("none of the requested allocators"),
        "{stderr}"
    );
}
