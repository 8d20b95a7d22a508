//! Frames in a library that was loaded with dlopen, allocated from and unloaded with dlclose
//! before the process ended still resolve: the interposer notes the loaded objects before each
//! dlclose, and the report maps the addresses by those MODULE records.

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const STALLSCOPE: &str = env!("CARGO_BIN_EXE_stallscope");

fn source(name: &str) -> PathBuf {
    common::test_source("stack_programs", name)
}

fn compile(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn frames_of_an_unloaded_library_resolve() {
    let dir = common::TempDir::new("stacks-dl");
    let lib = dir.join("libdlalloc.so");
    let exe = dir.join("dl_main");
    compile(&[
        "cc",
        "-O1",
        "-g",
        "-fPIC",
        "-shared",
        source("dl_lib.c").to_str().unwrap(),
        "-o",
        lib.to_str().unwrap(),
    ]);
    compile(&[
        "cc",
        "-O1",
        "-g",
        source("dl_main.c").to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        "-ldl",
    ]);
    let prof = dir.join("dl.prof");
    let out = Command::new(STALLSCOPE)
        .args(["run", "-q", "-o"])
        .arg(&prof)
        .arg("--")
        .arg(&exe)
        .arg(&lib)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unloaded\n");
    let out = Command::new(STALLSCOPE)
        .args(["report", "--json"])
        .arg(&prof)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mark = std::fs::read_to_string(source("dl_lib.c"))
        .unwrap()
        .lines()
        .position(|l| l.ends_with("// MARK dl_alloc_many"))
        .unwrap() as u64
        + 1;
    let sites = report["alloc"]["sites"].as_array().unwrap();
    let site = sites
        .iter()
        .find(|s| {
            s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["function"] == "dl_alloc_many")
        })
        .unwrap_or_else(|| panic!("no site in the unloaded library: {report:#}"));
    let u = &site["frames"][site["user_frame"].as_u64().unwrap() as usize];
    assert_eq!(u["function"], "dl_alloc_many", "{site}");
    assert_eq!(u["line"].as_u64(), Some(mark), "{site}");
    assert!(
        u["module"].as_str().unwrap().ends_with("libdlalloc.so"),
        "{u}"
    );
    assert!(u["file"].as_str().unwrap().ends_with("dl_lib.c"), "{u}");
    let caller = &site["frames"][site["user_frame"].as_u64().unwrap() as usize + 1];
    assert_eq!(caller["function"], "use", "{site}");
}

/// A second library loaded after the first was unloaded usually lands at the same addresses:
/// each stack must resolve against the library that was there when it was taken.
#[test]
fn two_libraries_at_the_same_addresses_are_told_apart_by_time() {
    let dir = common::TempDir::new("stacks-dl2");
    let lib_a = dir.join("liba.so");
    let lib_b = dir.join("libb.so");
    let exe = dir.join("dl_main");
    for (src, lib) in [("dl_lib.c", &lib_a), ("dl_lib_b.c", &lib_b)] {
        compile(&[
            "cc",
            "-O1",
            "-g",
            "-fPIC",
            "-shared",
            source(src).to_str().unwrap(),
            "-o",
            lib.to_str().unwrap(),
        ]);
    }
    compile(&[
        "cc",
        "-O1",
        "-g",
        source("dl_main.c").to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
        "-ldl",
    ]);
    let prof = dir.join("dl2.prof");
    // Relative library paths, as a program may pass them to dlopen: the profile keeps them
    // absolute, so the report can be run from anywhere.
    let out = Command::new(STALLSCOPE)
        .args(["run", "-q", "-o"])
        .arg(&prof)
        .args(["--", "./dl_main", "./liba.so", "./libb.so"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let same = String::from_utf8_lossy(&out.stderr).contains("same addresses");
    let out = Command::new(STALLSCOPE)
        .args(["report", "--json"])
        .arg(&prof)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sites = report["alloc"]["sites"].as_array().unwrap();
    for (function, file) in [
        ("dl_alloc_many", "dl_lib.c"),
        ("dl_alloc_other", "dl_lib_b.c"),
    ] {
        let site = sites
            .iter()
            .find(|s| user_of(s)["function"] == function)
            .unwrap_or_else(|| {
                panic!("no site in {function} (same addresses: {same}): {report:#}")
            });
        let u = user_of(site);
        assert!(u["file"].as_str().unwrap().ends_with(file), "{u}");
        assert!(u["module"].as_str().unwrap().starts_with('/'), "{u}");
    }
}

fn user_of(site: &Value) -> &Value {
    &site["frames"][site["user_frame"].as_u64().unwrap() as usize]
}
