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
