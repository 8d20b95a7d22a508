//! The corpus of real scaling bugs (tests/real_bugs/<id>/case.json, docs/CASES.md): the cases
//! whose cause is a lock inside a library, the allocator or I/O. Each case is data: its
//! case.json says how to build it, what its before and after run, and which finding the before
//! must get, naming what. For each case with `"ci": true`: build it, profile the before and the
//! after with `stallscope run` (2 threads), and check that the before's top high or medium
//! finding is the expected one and names the culprit, and that the after has no finding for
//! that cause. `benches/real_bugs.sh` measures every case (the slow ones too) without the
//! profiler.

mod common;

use common::{TempDir, have, have_tool, report_json, skipped, starved};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The kinds of cause this file's cases have (the others are tests/real_bugs_threads.rs's).
const KINDS: [&str; 3] = ["allocator", "library-lock", "io"];

/// The cases this file profiles in CI, by id.
const CI_CASES: [&str; 4] = [
    "rust-stdout-line-writes",
    "siremol-omp-rand-lock",
    "sqlite-memstatus-mutex",
    "regex-pool-contention",
];

/// A before whose threads waited for CPUs other processes held more than this share of their
/// lives seldom ran together, so it could not contend: the test says so and skips.
const STARVED: f64 = 0.25;

/// A side runs in under 5 s on a 2-core machine; one still running after this has hung.
const RUN_LIMIT: Duration = Duration::from_secs(60);

fn corpus() -> PathBuf {
    common::repo_file("tests/real_bugs")
}

fn case_json(id: &str) -> Value {
    let path = corpus().join(id).join("case.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every case's id, from the directories of tests/real_bugs that hold a case.json.
fn all_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(corpus())
        .expect("tests/real_bugs")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("case.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

/// Whether what a case needs is installed, under the missing-tool policy of tests/common (in
/// CI a failure, elsewhere a skip): `apt:PKG` a Debian package, `pip:NAME[==VERSION]` a Python
/// package, anything else a command.
fn needs_met(case: &Value) -> bool {
    let needs = case["needs"].as_array().map_or(&[][..], |v| v.as_slice());
    needs.iter().filter_map(Value::as_str).all(|need| {
        if let Some(pkg) = need.strip_prefix("apt:") {
            let installed = Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", pkg])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"));
            have(pkg, installed, &format!("apt-get install {pkg}"))
        } else if let Some(spec) = need.strip_prefix("pip:") {
            let name = spec.split("==").next().unwrap_or(spec);
            have_tool(
                &common::python3(),
                &["-m", "pip", "show", "-q", name],
                &format!("pip install {spec}"),
            )
        } else {
            have_tool(need, &["--version"], need)
        }
    })
}

/// Builds the case (`bash build.sh OUTDIR`) into target/real_bugs/<id>: OUTDIR.
fn build(id: &str, case: &Value) -> PathBuf {
    let out = common::repo_file("target/real_bugs").join(id);
    if let Some(script) = case["build"].as_str() {
        let dir = corpus().join(id);
        let done = Command::new("bash")
            .arg(dir.join(script))
            .arg(&out)
            .current_dir(&dir)
            .output()
            .expect("running bash");
        assert!(
            done.status.success(),
            "building {id} failed:\n{}",
            common::describe(&done)
        );
    }
    out
}

/// A side's command line, `{build}` replaced by OUTDIR.
fn argv(side: &Value, out: &Path) -> Vec<String> {
    side["argv"]
        .as_array()
        .expect("argv")
        .iter()
        .map(|a| {
            a.as_str()
                .expect("argv holds strings")
                .replace("{build}", &out.display().to_string())
        })
        .collect()
}

/// Profiles one side (`stallscope run -q -o DIR/NAME.prof -- ARGV`, the side's environment set)
/// with its output going to /dev/null, as the corpus's measurements run it (a program that
/// prints much would otherwise wait for the test's pipe), within a time limit.
fn profile_side(dir: &Path, name: &str, side: &Value, out: &Path) -> Value {
    let prof = dir.join(format!("{name}.prof"));
    let log = dir.join(format!("{name}.stderr"));
    let mut c = Command::new(common::stallscope());
    c.args(["run", "-q", "-o"])
        .arg(&prof)
        .arg("--")
        .args(argv(side, out))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("stderr file"));
    if let Some(env) = side["env"].as_object() {
        for (k, v) in env {
            c.env(k, v.as_str().unwrap_or(""));
        }
    }
    let mut child = c.spawn().expect("starting stallscope run");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for stallscope run") {
            break status;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name}: still running after {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success() && prof.is_file(),
        "{name}: stallscope run failed ({status}):\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    report_json(&prof)
}

fn severity(f: &Value) -> &str {
    f["severity"].as_str().unwrap_or("")
}

fn high_or_medium(f: &Value) -> bool {
    matches!(severity(f), "high" | "medium")
}

/// A finding's title and evidence, the text a reader sees.
fn text(f: &Value) -> String {
    let mut t = f["title"].as_str().unwrap_or("").to_string();
    for e in f["evidence"].as_array().map_or(&[][..], |v| v.as_slice()) {
        t.push('\n');
        t.push_str(e.as_str().unwrap_or(""));
    }
    t
}

/// Whether the finding names every one of `names` (an entry `a|b` is named by either).
fn names_all(f: &Value, names: &[&str]) -> bool {
    let t = text(f);
    names
        .iter()
        .all(|n| n.split('|').any(|alt| t.contains(alt)))
}

fn findings(r: &Value) -> &[Value] {
    r["findings"].as_array().map_or(&[][..], |v| v.as_slice())
}

/// The before's top cause: its first high or medium finding, looking through the working
/// threads' efficiency (`parallel-efficiency` sums up what the threads' time went to and points
/// at the biggest part, whose own finding says the cause).
fn top_cause(r: &Value) -> Option<&Value> {
    findings(r)
        .iter()
        .filter(|f| high_or_medium(f))
        .find(|f| f["id"] != "parallel-efficiency")
}

fn check_case(id: &str) {
    let case = case_json(id);
    if !needs_met(&case) {
        return;
    }
    let out = build(id, &case);
    let _machine = common::machine();
    let dir = TempDir::new(&format!("real-bugs-{id}"));
    let expect = &case["expect"];
    let finding = expect["finding"].as_str().expect("expect.finding");
    let names: Vec<&str> = expect["names"]
        .as_array()
        .expect("expect.names")
        .iter()
        .filter_map(Value::as_str)
        .collect();

    let before = profile_side(dir.path(), "before", &case["before"], &out);
    let top = top_cause(&before);
    if top.is_none_or(|f| f["id"] != finding)
        && let Some(why) = starved(&before, STARVED)
    {
        skipped(id, &why);
        return;
    }
    let top = top.unwrap_or_else(|| {
        panic!(
            "{id}: the before has no high or medium finding:\n{}",
            common::findings_text(&before, "\n")
        )
    });
    if top["id"] != finding {
        // The profile outlives the test's directory, to be read after a rare miss.
        let kept = out.join("before-missed.prof");
        let _ = std::fs::copy(dir.path().join("before.prof"), &kept);
        panic!(
            "{id}: the before's top finding is not {finding} (its profile: {}):\n{}",
            kept.display(),
            common::findings_text(&before, "\n")
        );
    }
    assert!(
        names_all(top, &names),
        "{id}: the before's {finding} does not name {names:?}:\n{}",
        text(top)
    );

    let after = profile_side(dir.path(), "after", &case["after"], &out);
    for f in findings(&after) {
        assert!(
            !(f["id"] == finding && names_all(f, &names)),
            "{id}: the after still has the cause's finding:\n{}",
            common::findings_text(&after, "\n")
        );
        assert!(
            !(high_or_medium(f) && names_all(f, &names)),
            "{id}: a high or medium finding of the after names the culprit:\n{}",
            common::findings_text(&after, "\n")
        );
    }
}

/// Every case of this file's kinds is complete and as the corpus's contract says, and every
/// one marked for CI is profiled below.
#[test]
fn the_lock_cases_are_complete() {
    let mut ours = 0;
    for id in all_ids() {
        let case = case_json(&id);
        let kind = case["kind"].as_str().unwrap_or("");
        if !KINDS.contains(&kind) {
            continue;
        }
        ours += 1;
        assert_eq!(
            case["id"],
            id.as_str(),
            "{id}: its id is its directory's name"
        );
        for key in ["title", "project", "source", "documented"] {
            assert!(
                case[key].as_str().is_some_and(|s| !s.is_empty()),
                "{id}: {key} is missing"
            );
        }
        assert!(
            case["source"].as_str().unwrap().starts_with("https://"),
            "{id}: its source is an address"
        );
        for side in ["before", "after"] {
            assert!(
                case[side]["argv"].as_array().is_some_and(|a| !a.is_empty()),
                "{id}: {side}.argv"
            );
        }
        assert!(
            case["threads"]["env"].is_string() || case["threads"]["arg"].is_u64(),
            "{id}: threads says how the thread count is given"
        );
        assert!(
            case["expect"]["finding"].is_string() && case["expect"]["names"].is_array(),
            "{id}: expect"
        );
        assert!(
            corpus().join(&id).join("README.md").is_file(),
            "{id}: README.md"
        );
        if case["ci"] == true {
            assert!(CI_CASES.contains(&id.as_str()), "{id} is not profiled here");
        }
    }
    assert!(ours >= 3, "only {ours} cases of kinds {KINDS:?}");
}

#[test]
fn sqlite_memstatus_mutex() {
    check_case("sqlite-memstatus-mutex");
}

#[test]
fn regex_pool_contention() {
    check_case("regex-pool-contention");
}

#[test]
fn siremol_omp_rand_lock() {
    check_case("siremol-omp-rand-lock");
}

#[test]
fn rust_stdout_line_writes() {
    check_case("rust-stdout-line-writes");
}
