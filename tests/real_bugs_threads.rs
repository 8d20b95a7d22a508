//! The corpus of real scaling bugs (tests/real_bugs/, docs/CASES.md), its cases of
//! threads, runtimes and serial work: kinds `runtime`, `serial`, `thread-churn` and
//! `oversubscription`. Each case is data (its case.json): a documented bug in software as users
//! install it, a before with the bug and an after with the documented fix. For each case with
//! `"ci": true` the test builds it, profiles the before and the after with `stallscope run`,
//! and asserts that the before's top HIGH or MEDIUM finding is the case's `expect.finding` and
//! names `expect.names` (the library and function, or the user's line), and that the after has
//! no finding of that id with more than half the before's stake (the fix moved the figure). `expect.same_cause` (optional) lists findings that tell the same cause
//! in the words of a construct: where both fire, the report keeps the construct's (one cause,
//! one finding), so either may lead. Cases with `"ci": false` run from benches/real_bugs.sh.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kinds of cause this file covers (the others' cases have a test of their own).
const KINDS: [&str; 4] = ["runtime", "serial", "thread-churn", "oversubscription"];

/// The share of the threads' lives spent waiting for CPUs other processes held above which a
/// before that misses its cause is reported as starved instead of failing: a worker that seldom
/// ran leaves little to blame.
const STARVED: f64 = 0.3;

struct Case {
    dir: PathBuf,
    json: Value,
}

impl Case {
    fn id(&self) -> &str {
        self.json["id"].as_str().expect("id")
    }

    fn build_dir(&self) -> PathBuf {
        repo().join("target/real_bugs").join(self.id())
    }

    /// The command of `side` ("before" or "after"): its argv with `{build}` filled in, its
    /// environment.
    fn command(&self, side: &str) -> (Vec<String>, Vec<(String, String)>) {
        let build = self.build_dir();
        let build = build.to_str().expect("a UTF-8 path");
        let argv = self.json[side]["argv"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: {side}.argv", self.id()))
            .iter()
            .map(|a| a.as_str().expect("argv strings").replace("{build}", build))
            .collect();
        let env = self.json[side]["env"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        (argv, env)
    }
}

/// The cases of this file's kinds, by id.
fn cases() -> Vec<Case> {
    let root = repo().join("tests/real_bugs");
    let mut out: Vec<Case> = std::fs::read_dir(&root)
        .expect("tests/real_bugs")
        .filter_map(|e| {
            let dir = e.ok()?.path();
            let text = std::fs::read_to_string(dir.join("case.json")).ok()?;
            let json: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: case.json: {e}", dir.display()));
            Some(Case { dir, json })
        })
        .filter(|c| KINDS.contains(&c.json["kind"].as_str().unwrap_or("")))
        .collect();
    out.sort_by(|a, b| a.id().cmp(b.id()));
    out
}

/// Whether what `need` names is installed, under the missing-tool policy (`have`): `apt:PKG`
/// (a Debian package), `pip:NAME==VERSION` (a Python module of that version, for `python3`),
/// `cargo`.
fn present(need: &str) -> bool {
    if let Some(pkg) = need.strip_prefix("apt:") {
        let installed = Command::new("dpkg-query")
            .args(["-W", "-f=${Status}", pkg])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"));
        return have(pkg, installed, &format!("apt-get install {pkg}"));
    }
    if let Some(spec) = need.strip_prefix("pip:") {
        let (name, version) = spec.split_once("==").unwrap_or((spec, ""));
        let probe = format!(
            "import importlib.metadata as m, sys; sys.exit(0 if '{version}' in ('', m.version('{name}')) else 1)"
        );
        let ok = Command::new("python3")
            .args(["-c", &probe])
            .output()
            .is_ok_and(|o| o.status.success());
        return have(spec, ok, &format!("pip install {spec}"));
    }
    have_tool(need, &["--version"], need)
}

/// Builds the case into target/real_bugs/ID (its `build` script, idempotent).
fn build(case: &Case) {
    let Some(script) = case.json["build"].as_str() else {
        return;
    };
    let out = Command::new("bash")
        .arg(script)
        .arg(case.build_dir())
        .current_dir(&case.dir)
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}: building failed\n{}",
        case.id(),
        describe(&out)
    );
}

/// Profiles one side of the case and returns its report.
fn profile_side(case: &Case, side: &str, dir: &Path) -> Value {
    let (argv, env) = case.command(side);
    let (_, path) = profile_with(dir, &format!("{side}.prof"), &[], &argv, 0, |c| {
        for (k, v) in &env {
            c.env(k, v);
        }
    });
    report_json(&path)
}

fn findings(report: &Value) -> &[Value] {
    report["findings"].as_array().map_or(&[], Vec::as_slice)
}

fn words(f: &Value) -> String {
    let evidence: Vec<&str> = f["evidence"]
        .as_array()
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    format!(
        "{} {} {} {}",
        f["title"].as_str().unwrap_or(""),
        evidence.join(" "),
        f["cause"].as_str().unwrap_or(""),
        f["remedy"].as_str().unwrap_or("")
    )
}

fn titles(report: &Value) -> String {
    findings(report)
        .iter()
        .map(|f| format!("  {} {} [{}]", f["severity"], f["title"], f["id"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What is wrong with the before's findings (None: its top HIGH or MEDIUM finding is the
/// expected one and names what it must).
fn before_miss(case: &Case, report: &Value) -> Option<String> {
    let expect = &case.json["expect"];
    let id = expect["finding"].as_str().expect("expect.finding");
    let ids = cause_ids(case);
    let top = findings(report)
        .iter()
        .find(|f| matches!(f["severity"].as_str(), Some("high" | "medium")));
    let Some(top) = top else {
        return Some(format!("no HIGH or MEDIUM finding, expected {id}"));
    };
    if !ids.iter().any(|i| top["id"] == *i) {
        return Some(format!(
            "the top finding is {}, expected {ids:?}",
            top["id"]
        ));
    }
    let text = words(top);
    let missing: Vec<&str> = expect["names"]
        .as_array()
        .expect("expect.names")
        .iter()
        .filter_map(Value::as_str)
        .filter(|n| !text.contains(n))
        .collect();
    (!missing.is_empty()).then(|| format!("{id} does not name {missing:?}: {text}"))
}

/// The ids of the findings that tell the case's cause: `expect.finding` and `expect.same_cause`.
fn cause_ids(case: &Case) -> Vec<String> {
    let expect = &case.json["expect"];
    std::iter::once(&expect["finding"])
        .chain(expect["same_cause"].as_array().into_iter().flatten())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn run_case(case: &Case) {
    let dir = TempDir::new(&format!("real-bug-{}", case.id()));
    let before = profile_side(case, "before", dir.path());
    if let Some(miss) = before_miss(case, &before) {
        if let Some(why) = starved(&before, STARVED) {
            skipped(case.id(), &format!("{why}; the before's findings: {miss}"));
            return;
        }
        panic!("{}: before: {miss}\n{}", case.id(), titles(&before));
    }
    let after = profile_side(case, "after", dir.path());
    let ids = cause_ids(case);
    // The fix moves the figure: what a finding of the cause still finds after it (the serial
    // stretch left: zstd reads its input and writes its output on one thread whatever the job
    // size, 80-120 ms, LOW or MEDIUM by the run) is at most half of the before's stake.
    let stake = |f: &Value| f["stake_ns"].as_u64().unwrap_or(0);
    let before_stake = findings(&before)
        .iter()
        .filter(|f| ids.iter().any(|i| f["id"] == *i))
        .map(stake)
        .max()
        .unwrap_or(0);
    for f in findings(&after)
        .iter()
        .filter(|f| ids.iter().any(|i| f["id"] == *i))
    {
        assert!(
            stake(f) <= before_stake / 2,
            "{}: the after (the documented fix) still has one of {ids:?} (the before's stake {before_stake} ns):\n{}",
            case.id(),
            titles(&after)
        );
    }
}

/// The corpus is well formed: every case of these kinds says where it is documented, what it
/// needs, how to run before and after and bench's thread count, and what it expects; at least
/// five cases from at least three projects, at least three of them run here.
#[test]
fn the_cases_are_complete() {
    let cases = cases();
    assert!(cases.len() >= 5, "{} cases", cases.len());
    let mut projects: Vec<&str> = Vec::new();
    for c in &cases {
        let j = &c.json;
        for key in ["title", "project", "kind", "source", "documented"] {
            assert!(
                j[key].as_str().is_some_and(|s| !s.is_empty()),
                "{}: {key}",
                c.id()
            );
        }
        assert!(j["source"].as_str().unwrap().starts_with("https://"));
        assert!(c.dir.join("README.md").is_file(), "{}: README.md", c.id());
        assert!(j["needs"].is_array(), "{}: needs", c.id());
        for side in ["before", "after"] {
            let (argv, _) = c.command(side);
            assert!(!argv.is_empty(), "{}: {side}.argv", c.id());
        }
        let threads = &j["threads"];
        assert!(
            threads["env"].is_string() || threads["arg"].is_u64(),
            "{}: threads",
            c.id()
        );
        if let Some(i) = threads["arg"].as_u64() {
            let (argv, _) = c.command("before");
            assert!(
                argv.get(i as usize)
                    .is_some_and(|a| a.parse::<u32>().is_ok()),
                "{}: threads.arg {i} is no number in {argv:?}",
                c.id()
            );
        }
        assert!(j["expect"]["finding"].is_string() && j["expect"]["names"].is_array());
        let project = j["project"].as_str().unwrap();
        let project = project.split(" (").next().unwrap_or(project);
        if !projects.contains(&project) {
            projects.push(project);
        }
    }
    assert!(projects.len() >= 3, "projects: {projects:?}");
    assert!(
        cases.iter().filter(|c| c.json["ci"] == true).count() >= 3,
        "fewer than three cases run in CI"
    );
}

/// Every CI case: the before's top finding names its cause at the culprit, the after has none.
#[test]
fn each_before_names_its_cause_and_each_after_is_quiet() {
    let _machine = machine();
    for case in cases().iter().filter(|c| c.json["ci"] == true) {
        let needs: Vec<&str> = case.json["needs"]
            .as_array()
            .map(|n| n.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !needs.iter().all(|n| present(n)) {
            continue;
        }
        build(case);
        run_case(case);
    }
}

/// The mechanism the OpenBLAS case needs, in a program CI builds: a thread that waits for its
/// turn by polling a flag in a loop of `nop`s and a load (no `pause`, no system call) is
/// spinning, named at its function, not computing.
#[test]
fn a_polling_loop_without_pause_is_spinning() {
    let dir = TempDir::new("real-bugs-polling");
    let exe = compile_file(
        dir.path(),
        &test_source("real_bugs_programs", "polling_handoff.c"),
        &["-g"],
    );
    let _machine = machine();
    let (_, prof) = profile(dir.path(), "polling.prof", &[], &[exe], 0);
    let r = report_json(&prof);
    let spinning = findings(&r)
        .iter()
        .find(|f| f["id"] == "spinning" && words(f).contains("wait_turn"));
    if spinning.is_none()
        && let Some(why) = starved(&r, STARVED)
    {
        skipped("a_polling_loop_without_pause_is_spinning", &why);
        return;
    }
    assert!(
        spinning.is_some(),
        "no spinning finding in wait_turn:\n{}",
        titles(&r)
    );
}
