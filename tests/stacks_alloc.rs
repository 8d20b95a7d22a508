//! Allocation call stacks end to end: C++ programs with known call chains are built with
//! `g++ -O1 -g` (frame pointers omitted, as by default, so stacks come from .eh_frame unwinding),
//! run under `stallscope run` at the default sampling rates, and `report --json` must name the
//! user frames by function, file and line, and estimate each site's calls and bytes within the
//! statistical error stated in docs/STACKS.md.

mod common;

use common::{TempDir, have_file, test_source};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const STALLSCOPE: &str = env!("CARGO_BIN_EXE_stallscope");
/// The defaults of `stallscope run`.
const COUNT_PERIOD: f64 = 1024.0;
const MEAN_BYTES: f64 = 512.0 * 1024.0;
/// Requests below this many bytes are sampled by count alone (PROCESS flag SMALL_BY_COUNT).
const BYTES_FROM: f64 = 1000.0;

fn source(name: &str) -> PathBuf {
    test_source("stack_programs", name)
}

/// The line of `// MARK <name>` in a test program.
fn mark_line(file: &str, name: &str) -> u64 {
    let text = std::fs::read_to_string(source(file)).expect("program source");
    let needle = format!("// MARK {name}");
    text.lines()
        .position(|l| l.trim_end().ends_with(&needle))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("no {needle} in {file}"))
}

fn compile(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("running the compiler");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_and_report(dir: &Path, run_args: &[&str], cmd: &[&str]) -> Value {
    let prof = dir.join("out.prof");
    let status = Command::new(STALLSCOPE)
        .arg("run")
        .arg("-q")
        .args(run_args)
        .arg("-o")
        .arg(&prof)
        .arg("--")
        .args(cmd)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("stallscope run");
    assert!(status.success(), "the program failed under stallscope");
    let out = Command::new(STALLSCOPE)
        .args(["report", "--json"])
        .arg(&prof)
        .output()
        .expect("stallscope report");
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

fn function(frame: &Value) -> &str {
    frame["function"].as_str().unwrap_or("")
}

fn sites(report: &Value) -> &Vec<Value> {
    report["alloc"]["sites"].as_array().expect("alloc.sites")
}

/// The sites whose user frame is in function `user` and whose caller frame is `caller`.
fn find_sites<'a>(report: &'a Value, user: &str, caller: Option<&str>) -> Vec<&'a Value> {
    sites(report)
        .iter()
        .filter(|s| {
            let frames = s["frames"].as_array().expect("frames");
            let u = s["user_frame"].as_u64().expect("user_frame") as usize;
            function(&frames[u]).starts_with(user)
                && caller.is_none_or(|c| {
                    frames
                        .get(u + 1)
                        .is_some_and(|f| function(f).starts_with(c))
                })
        })
        .collect()
}

fn user_frame(site: &Value) -> &Value {
    &site["frames"][site["user_frame"].as_u64().expect("user_frame") as usize]
}

/// Checks the site estimates of `n` calls of `size` bytes each against the exact numbers. Each
/// call is sampled independently with probability p = 1 - (1 - 1/C) exp(-size/B) (a request
/// below 1000 bytes, with glibc's allocator: p = 1/C, by count alone), and weighted 1/p, so the
/// estimated calls have standard error sqrt(n (1 - p) / p); 4.5 standard errors (a false alarm
/// about once in 150,000 checks) plus one call of rounding are allowed.
fn check_estimate(what: &str, site_calls: f64, site_bytes: f64, n: f64, size: f64) {
    let p = if size < BYTES_FROM {
        1.0 / COUNT_PERIOD
    } else {
        1.0 - (1.0 - 1.0 / COUNT_PERIOD) * (-size / MEAN_BYTES).exp()
    };
    let se = (n * (1.0 - p) / p).sqrt();
    let tolerance = 4.5 * se + 1.0;
    assert!(
        (site_calls - n).abs() <= tolerance,
        "{what}: estimated {site_calls} calls, exactly {n} (standard error {se:.0})"
    );
    assert!(
        (site_bytes - n * size).abs() <= tolerance * size,
        "{what}: estimated {site_bytes} bytes, exactly {} (standard error {:.0})",
        n * size,
        se * size
    );
}

fn sum(sites: &[&Value], key: &str) -> f64 {
    sites.iter().map(|s| s[key].as_f64().unwrap_or(0.0)).sum()
}

#[test]
fn known_call_chains_are_named_with_their_lines_and_estimated() {
    if !common::have_cxx() {
        return;
    }
    check_known_sites("known", &[]);
}

/// libunwind (opt-in) must find the same chains; skipped where Debian's libunwind8 is missing.
#[test]
fn libunwind_finds_the_same_chains() {
    if !common::have_cxx() {
        return;
    }
    let paths = [
        "/usr/lib/x86_64-linux-gnu/libunwind.so.8",
        "/usr/lib/libunwind.so.8",
    ];
    if !have_file(&paths, "libunwind8") {
        return;
    }
    check_known_sites("libunwind", &["--unwinder", "libunwind"]);
}

fn check_known_sites(tag: &str, run_args: &[&str]) {
    let dir = TempDir::new(&format!("stacks-{tag}"));
    let exe = dir.join("known_sites");
    let src = source("known_sites.cpp");
    compile(&[
        "g++",
        "-O1",
        "-g",
        src.to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
    ]);
    let report = run_and_report(&dir, run_args, &[exe.to_str().unwrap()]);
    let file = "known_sites.cpp";
    assert!(!sites(&report).is_empty(), "no allocation sites: {report}");
    for s in sites(&report) {
        for f in s["frames"].as_array().unwrap() {
            assert!(
                !f["module"].as_str().unwrap_or("").contains("libstallscope"),
                "the interposer's own frames are cut: {s}"
            );
        }
    }

    // A helper called from two places: two sites, told apart by the caller.
    for (caller, n, size) in [
        ("from_small", 200_000.0, 48.0),
        ("from_large", 3_000.0, 200_000.0),
    ] {
        let found = find_sites(&report, "helper(unsigned long)", Some(caller));
        assert!(!found.is_empty(), "no site helper <- {caller}: {report:#}");
        for s in &found {
            let u = user_frame(s);
            assert!(u["file"].as_str().unwrap_or("").ends_with(file), "{u}");
            assert_eq!(u["line"].as_u64(), Some(mark_line(file, "helper")), "{u}");
            let c = &s["frames"][s["user_frame"].as_u64().unwrap() as usize + 1];
            assert_eq!(c["line"].as_u64(), Some(mark_line(file, caller)), "{c}");
            assert_eq!(s["function"], "malloc");
        }
        check_estimate(caller, sum(&found, "calls"), sum(&found, "bytes"), n, size);
    }

    // An inlined function: its own frame (marked inlined) at its line, then its caller.
    let found = find_sites(&report, "inlined_alloc", Some("from_inlined"));
    assert!(!found.is_empty(), "no site in inlined_alloc: {report:#}");
    for s in &found {
        let u = user_frame(s);
        assert_eq!(u["inlined"], true, "{u}");
        assert_eq!(u["line"].as_u64(), Some(mark_line(file, "inlined_alloc")));
        let c = &s["frames"][s["user_frame"].as_u64().unwrap() as usize + 1];
        assert_eq!(c["line"].as_u64(), Some(mark_line(file, "from_inlined")));
        assert_eq!(s["function"], "calloc");
    }
    check_estimate(
        "inlined",
        sum(&found, "calls"),
        sum(&found, "bytes"),
        100_000.0,
        96.0,
    );

    // A std::string past the small-string size: operator new inside libstdc++'s string, shown by
    // the user's line.
    let found = find_sites(&report, "make_strings(int)", None);
    assert!(!found.is_empty(), "no site in make_strings: {report:#}");
    for s in &found {
        assert_eq!(
            user_frame(s)["line"].as_u64(),
            Some(mark_line(file, "make_strings"))
        );
        let frames = s["frames"].as_array().unwrap();
        assert!(
            frames
                .iter()
                .any(|f| function(f).starts_with("operator new")),
            "the chain goes through operator new: {s}"
        );
    }
    check_estimate(
        "std::string",
        sum(&found, "calls"),
        sum(&found, "bytes"),
        100_000.0,
        101.0,
    );

    // istringstream >> double: the chain through num_get::do_get in libstdc++ is whole.
    let found = find_sites(&report, "parse_doubles(int)", None);
    assert!(!found.is_empty(), "no site in parse_doubles: {report:#}");
    let s = found
        .iter()
        .find(|s| {
            s["frames"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| function(f).contains("num_get") && function(f).contains("do_get"))
        })
        .unwrap_or_else(|| panic!("no chain through num_get::do_get: {found:#?}"));
    assert_eq!(
        user_frame(s)["line"].as_u64(),
        Some(mark_line(file, "parse_doubles"))
    );
    assert!(
        s["frames"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| function(f).contains("operator>>(double&)")),
        "{s}"
    );

    let sampling = &report["alloc"]["stack_sampling"];
    assert_eq!(sampling["count_period"], 1024);
    assert_eq!(sampling["mean_bytes"], 512 * 1024);
    assert_eq!(sampling["bytes_from"], BYTES_FROM as u64);
}

#[test]
fn text_report_shows_sites_and_full_chains() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("stacks-text");
    let exe = dir.join("known_sites");
    let src = source("known_sites.cpp");
    compile(&[
        "g++",
        "-O1",
        "-g",
        src.to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
    ]);
    let prof = dir.join("t.prof");
    let ok = Command::new(STALLSCOPE)
        .args(["run", "-q", "-o"])
        .arg(&prof)
        .arg("--")
        .arg(&exe)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let out = Command::new(STALLSCOPE)
        .args(["report", "--stacks"])
        .arg(&prof)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Allocation sites by estimated time",
        "Allocation sites by calls",
        "Allocation sites by bytes",
        "helper(unsigned long) (stack_programs/known_sites.cpp:",
        "<- from_small(int)",
        "> make_strings(int)",
        "main (stack_programs/known_sites.cpp:",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn no_stacks_turns_sampling_off() {
    if !common::have_cxx() {
        return;
    }
    let dir = TempDir::new("stacks-off");
    let exe = dir.join("known_sites");
    let src = source("known_sites.cpp");
    compile(&[
        "g++",
        "-O1",
        "-g",
        src.to_str().unwrap(),
        "-o",
        exe.to_str().unwrap(),
    ]);
    let report = run_and_report(&dir, &["--no-stacks"], &[exe.to_str().unwrap()]);
    assert_eq!(report["alloc"]["sites"].as_array().map(Vec::len), Some(0));
    assert!(report["alloc"]["by_function"]["malloc"]["calls"].as_u64() > Some(200_000));
}
