//! Allocation stacks of a Rust program: frames demangled (no hashes), the standard library's
//! allocation frames (alloc::, core::, <alloc::...>) skipped, the user's function as the site,
//! with its line, and its calls estimated within the stated statistical error.

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn source(name: &str) -> PathBuf {
    common::test_source("stack_programs", name)
}

#[test]
fn rust_frames_are_demangled_and_the_user_function_is_the_site() {
    let dir = common::TempDir::new("stacks-rust");
    let exe = dir.join("rust_sites");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc)
        .args(["-O", "-g", "--edition", "2021"])
        .arg(source("rust_sites.rs"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, prof) = common::profile(&dir, "rust.prof", &["-q"], &[&exe], 0);
    let report = common::report_json(&prof);
    let mark = std::fs::read_to_string(source("rust_sites.rs"))
        .unwrap()
        .lines()
        .position(|l| l.ends_with("// MARK make_vectors"))
        .unwrap() as u64
        + 1;
    let sites: Vec<&Value> = report["alloc"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let u = &s["frames"][s["user_frame"].as_u64().unwrap() as usize];
            u["function"] == "rust_sites::make_vectors"
        })
        .collect();
    assert!(!sites.is_empty(), "no site in make_vectors: {report:#}");
    for s in &sites {
        let frames = s["frames"].as_array().unwrap();
        let u = &frames[s["user_frame"].as_u64().unwrap() as usize];
        assert_eq!(u["line"].as_u64(), Some(mark), "{s:#}");
        assert!(u["file"].as_str().unwrap().ends_with("rust_sites.rs"));
        for f in frames {
            let name = f["function"].as_str().unwrap_or("");
            assert!(
                !name.contains("17h") || !name.ends_with('E'),
                "mangled: {name}"
            );
        }
        assert!(
            frames[..s["user_frame"].as_u64().unwrap() as usize]
                .iter()
                .all(|f| f["function"]
                    .as_str()
                    .is_none_or(|n| !n.starts_with("rust_sites::"))),
            "the frames inside the user frame are the standard library's: {s:#}"
        );
    }
    // 200,000 calls of 8 * (16 + i % 8) bytes; p(s) = 1 - (1 - 1/1024) exp(-s / 512 KiB).
    let mut var = 0.0;
    for k in 0..8 {
        let size = 8.0 * (16 + k) as f64;
        let p = 1.0 - (1.0 - 1.0 / 1024.0) * (-size / (512.0 * 1024.0)).exp();
        var += 25_000.0 * (1.0 - p) / p;
    }
    let se = var.sqrt();
    let calls: f64 = sites.iter().map(|s| s["calls"].as_f64().unwrap()).sum();
    assert!(
        (calls - 200_000.0).abs() <= 4.5 * se + 1.0,
        "estimated {calls} calls, exactly 200000 (standard error {se:.0})"
    );
}
