//! The interposer's fast unwinder (preload/unwind.c) against libgcc's: with every allocation
//! sampled (`--timing exact --stack-period 1`), a program whose frames take every shape an
//! unwinder meets (a variable-length array, a realigned stack, a recursion deeper than a stack
//! keeps, a signal handler, threads) and a C++ program through libstdc++ must give the same sites
//! with the same counts whether stacks are unwound by the fast unwinder (the default) or by
//! libgcc's alone (STALLSCOPE_FAST_UNWIND=0).

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

type Sites = BTreeMap<String, u64>;

/// Every site as "function <- frame <- frame ..." (each frame by function, file and line) with
/// its estimated calls.
fn sites(report: &Value) -> Sites {
    let mut out = Sites::new();
    for s in report["alloc"]["sites"].as_array().expect("alloc.sites") {
        let frames: Vec<String> = s["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .map(|f| {
                format!(
                    "{}@{}:{}",
                    f["function"].as_str().unwrap_or("?"),
                    f["file"].as_str().unwrap_or("?"),
                    f["line"].as_u64().unwrap_or(0)
                )
            })
            .collect();
        let key = format!("{} <- {}", s["function"], frames.join(" <- "));
        *out.entry(key).or_default() += s["calls"].as_u64().unwrap_or(0);
    }
    out
}

fn profile_sites(dir: &Path, name: &str, exe: &Path, fast: bool) -> Sites {
    let (_, prof) = profile_with(
        dir,
        name,
        &["-q", "--timing", "exact", "--stack-period", "1"],
        &[exe],
        0,
        |c| {
            if !fast {
                c.env("STALLSCOPE_FAST_UNWIND", "0");
            }
        },
    );
    sites(&report_json(&prof))
}

fn check_same_sites(dir: &Path, exe: &Path) -> Sites {
    let fast = profile_sites(dir, "fast.prof", exe, true);
    let libgcc = profile_sites(dir, "libgcc.prof", exe, false);
    assert!(!fast.is_empty(), "no allocation sites");
    for (site, calls) in &libgcc {
        assert_eq!(
            fast.get(site),
            Some(calls),
            "libgcc's site {site} ({calls} calls) differs with the fast unwinder\nfast: {fast:#?}"
        );
    }
    assert_eq!(
        fast.len(),
        libgcc.len(),
        "the fast unwinder found other sites\nfast: {fast:#?}\nlibgcc: {libgcc:#?}"
    );
    fast
}

#[test]
fn frames_of_every_shape_unwind_as_with_libgcc() {
    let dir = TempDir::new("unwind-shapes");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stack_programs/unwind_shapes.c");
    let exe = compile_file(dir.path(), &src, &["-O2", "-g"]);
    let sites = check_same_sites(dir.path(), &exe);
    let has = |needle: &[&str]| sites.keys().any(|k| needle.iter().all(|n| k.contains(n)));
    assert!(has(&["leaf_alloc", "with_vla", "worker"]), "{sites:#?}");
    assert!(has(&["leaf_alloc", "with_aligned", "main"]), "{sites:#?}");
    assert!(has(&["on_signal", "main"]), "{sites:#?}");
    assert!(
        sites
            .keys()
            .any(|k| k.matches("deep@").count() >= 60 && k.contains("leaf_alloc")),
        "the deep recursion is kept to the stack's limit: {sites:#?}"
    );
}

#[test]
fn libstdcxx_chains_unwind_as_with_libgcc() {
    let dir = TempDir::new("unwind-cxx");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stack_programs/known_sites.cpp");
    let exe = compile_file(dir.path(), &src, &["-g"]);
    let sites = check_same_sites(dir.path(), &exe);
    assert!(
        sites.keys().any(|k| k.contains("parse_doubles")),
        "{sites:#?}"
    );
}

/// CPU samples start from an interrupted instruction, anywhere in a function: in a prologue that
/// pushes registers or moves the stack pointer by more than a page, between an epilogue's
/// `pop %rbp` and its `ret`, in a leaf without a frame. Every sampled stack of
/// `interrupted_frames.c` must follow its call graph and reach `main`, whether unwound by the
/// interposer's own unwinder (the default; a C program is given no libgcc) or by libgcc's alone.
#[test]
fn cpu_samples_unwind_from_any_interrupted_instruction_along_the_call_graph() {
    let dir = TempDir::new("unwind-interrupted");
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/stack_programs/interrupted_frames.c");
    let exe = compile_file(dir.path(), &src, &["-O2", "-g"]);
    let ours = ["main", "with_fp", "big_frame", "pushes", "leaf"];
    let calls: &[(&str, &str)] = &[
        ("main", "with_fp"),
        ("main", "pushes"),
        ("main", "big_frame"),
        ("with_fp", "big_frame"),
        ("big_frame", "pushes"),
        ("pushes", "leaf"),
    ];
    for fast in [true, false] {
        let name = if fast { "fast.prof" } else { "libgcc.prof" };
        let (_, prof) = profile_with(
            dir.path(),
            name,
            &["-q", "--sample-hz", "1000"],
            &[exe.to_str().unwrap(), "150000000"],
            0,
            |c| {
                if !fast {
                    c.env("STALLSCOPE_FAST_UNWIND", "0");
                }
            },
        );
        let out = std::process::Command::new(stallscope())
            .args(["export", "-f", "collapsed", "--weight", "cpu"])
            .arg(&prof)
            .output()
            .unwrap();
        assert_success(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        let (mut in_ours, mut complete, mut stacks) = (0u64, 0u64, 0usize);
        for line in text.lines() {
            let (stack, value) = line.rsplit_once(' ').unwrap();
            let value: u64 = value.parse().unwrap();
            let frames: Vec<&str> = stack.split(';').collect();
            let Some(leaf) = frames.last() else { continue };
            if !ours.contains(leaf) {
                continue; // the C library's start, the interposer's own work at exit
            }
            in_ours += value;
            stacks += 1;
            // Root first: from main down, every frame is called by the one before it.
            if let Some(m) = frames.iter().position(|f| *f == "main") {
                complete += value;
                for pair in frames[m..].windows(2) {
                    assert!(
                        calls.contains(&(pair[0], pair[1])),
                        "{name}: {} does not call {} in {stack}",
                        pair[0],
                        pair[1]
                    );
                }
            }
        }
        assert!(stacks >= 6, "{name}: every path sampled: {text}");
        assert!(
            complete * 100 >= in_ours * 99,
            "{name}: stacks short of main: {complete} of {in_ours}\n{text}"
        );
    }
}
