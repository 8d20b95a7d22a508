//! Symbolization from a separate debug file found by build id (as Debian's -dbgsym packages
//! install them under /usr/lib/debug/.build-id/), and `module+offset` for what cannot be resolved.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const STALLSCOPE: &str = env!("CARGO_BIN_EXE_stallscope");

fn source(name: &str) -> PathBuf {
    common::test_source("stack_programs", name)
}

fn ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn build_id(path: &Path) -> String {
    // `readelf -n` prints "Build ID: <hex>".
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("a build id")
        .trim()
        .to_string()
}

fn report(prof: &Path, debug_root: &Path) -> Value {
    let out = Command::new(STALLSCOPE)
        .args(["report", "--json"])
        .arg(prof)
        .env("STALLSCOPE_DEBUG_ROOT", debug_root)
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

fn helper_site(report: &Value) -> Option<&Value> {
    report["alloc"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["frames"].as_array().unwrap().iter().any(|f| {
                f["function"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("from_large"))
            })
        })
}

#[test]
fn a_stripped_binary_resolves_through_its_build_id_debug_file() {
    if !common::have_cxx() {
        return;
    }
    let dir = common::TempDir::new("stacks-dbg");
    let exe = dir.join("known_sites");
    ok(Command::new("g++")
        .args(["-O1", "-g", "-Wl,--build-id"])
        .arg(source("known_sites.cpp"))
        .arg("-o")
        .arg(&exe));
    let id = build_id(&exe);
    let root = dir.join("debug");
    let debug_file = root
        .join(".build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]));
    std::fs::create_dir_all(debug_file.parent().unwrap()).unwrap();
    ok(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&exe)
        .arg(&debug_file));
    ok(Command::new("strip").arg("--strip-all").arg(&exe));
    assert_eq!(build_id(&exe), id, "strip keeps the build id");

    let prof = dir.join("dbg.prof");
    let status = Command::new(STALLSCOPE)
        .args(["run", "-q", "-o"])
        .arg(&prof)
        .arg("--")
        .arg(&exe)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    // With the debug file: names, files and lines.
    let with = report(&prof, &root);
    let site = helper_site(&with).unwrap_or_else(|| panic!("no from_large site: {with:#}"));
    let user = &site["frames"][site["user_frame"].as_u64().unwrap() as usize];
    assert_eq!(user["function"], "helper(unsigned long)", "{site:#}");
    assert!(user["file"].as_str().unwrap().ends_with("known_sites.cpp"));
    assert!(user["line"].as_u64().is_some());

    // Without it (another debug root): the stripped program's frames are module+offset, kept.
    let without = report(&prof, &dir.join("nowhere"));
    assert!(helper_site(&without).is_none());
    let sites = without["alloc"]["sites"].as_array().unwrap();
    assert!(!sites.is_empty());
    let exe_frames: Vec<&Value> = sites
        .iter()
        .flat_map(|s| s["frames"].as_array().unwrap())
        .filter(|f| f["module"].as_str() == exe.to_str())
        .collect();
    assert!(!exe_frames.is_empty(), "{without:#}");
    for f in exe_frames {
        assert!(f["offset"].as_str().unwrap().starts_with("0x"), "{f}");
        assert!(f["line"].is_null(), "{f}");
    }
}
