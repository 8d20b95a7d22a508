//! The sampled thread stacks in every export, on tests/golden/sampled.prof (a real profile of
//! tests/golden/work.c with thread-state samples, anonymized: frames are `module+offset`):
//! golden files for collapsed `cpu`/`wall`/`off-cpu`, pprof and speedscope
//! (`STALLSCOPE_BLESS=1 cargo test --release --test export_sampled` rewrites them); `go tool
//! pprof` reads every sample type and filters by every label; the real speedscope app loads the
//! file in headless Chromium and shows its frames without an error; and on a real program with a
//! known hot function, the CPU flame graph's heaviest leaf is that function.

#[path = "../src/html/browser.rs"]
mod browser;
mod common;

use common::{TempDir, check_golden as check, have, stallscope_in_repo};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::Command;

const PROFILE: &str = "tests/golden/sampled.prof";

fn export(args: &[&str]) -> Vec<u8> {
    let mut all = vec!["export"];
    all.extend_from_slice(args);
    all.push(PROFILE);
    stallscope_in_repo(&all)
}

/// The `(stack, value)` lines of a collapsed export.
fn folded(text: &str) -> Vec<(Vec<&str>, u64)> {
    text.lines()
        .map(|l| {
            let (stack, value) = l.rsplit_once(' ').expect("`stack value`");
            (stack.split(';').collect(), value.parse().expect("a number"))
        })
        .collect()
}

/// The report's thread-state figures: per state key, summed over threads (ns).
fn state_totals() -> Vec<(String, u64)> {
    let report: Value = serde_json::from_slice(&export(&["-f", "json"])).unwrap();
    let threads = report["threads"].as_array().expect("threads");
    let mut totals: std::collections::BTreeMap<String, u64> = Default::default();
    for t in threads {
        for (key, ns) in t["states"].as_object().expect("states per thread") {
            let Some(state) = key.strip_suffix("_ns").filter(|k| *k != "unaccounted") else {
                continue;
            };
            *totals.entry(state.to_string()).or_default() += ns.as_u64().unwrap();
        }
    }
    totals.into_iter().collect()
}

#[test]
fn collapsed_sampled_weights_match_golden_and_the_reports_states() {
    let totals = state_totals();
    assert!(totals.iter().any(|(_, ns)| *ns > 0), "{totals:?}");
    let wall_total: u64 = totals.iter().map(|t| t.1).sum();
    for weight in ["cpu", "wall", "off-cpu"] {
        let out = export(&["-f", "collapsed", "--weight", weight]);
        check(&format!("sampled.collapsed-{weight}.txt"), &out);
        let text = String::from_utf8(out).unwrap();
        let lines = folded(&text);
        assert!(!lines.is_empty(), "no stacks for {weight}");
        let sum: u64 = lines.iter().map(|l| l.1).sum();
        if weight == "wall" {
            assert_eq!(sum, wall_total, "wall is every sample's time");
        }
        for (frames, _) in &lines {
            assert!(frames.iter().all(|f| !f.is_empty()), "{frames:?}");
            // CPU stacks end at the sampled function; the others start with the state.
            let root_is_state = frames[0].starts_with('[') && frames[0].ends_with(']');
            assert_eq!(root_is_state, weight != "cpu", "{weight}: {frames:?}");
        }
    }
    // Each state's stacks: rooted at that state, summing to the report's figure for it.
    for (key, ns) in &totals {
        let text = String::from_utf8(export(&["-f", "collapsed", "--weight", key])).unwrap();
        let lines = folded(&text);
        assert_eq!(lines.iter().map(|l| l.1).sum::<u64>(), *ns, "state {key}");
        let root = format!("[{key}]");
        assert!(
            lines.iter().all(|(f, _)| f[0] == root),
            "state {key}:\n{text}"
        );
    }
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("pprof output is gzip");
    out
}

fn pprof(go: &str, dir: &TempDir, args: &[&str], file: &std::path::Path) -> String {
    let out = Command::new(go)
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", dir.path())
        .env("HOME", dir.path())
        // Go builds `pprof` on first use: keep its build cache between runs (HOME is a
        // fresh directory).
        .env("GOCACHE", common::repo_file("target/go-cache"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "go tool pprof {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `Total samples = X` of `go tool pprof -top`, with its unit.
fn total(top: &str) -> String {
    let line = top
        .lines()
        .find(|l| l.contains("Total samples = "))
        .unwrap_or_else(|| panic!("no total in\n{top}"));
    let rest = &line[line.find("Total samples = ").unwrap() + 16..];
    rest.split_whitespace().next().unwrap().to_string()
}

/// What the filters kept: `Showing nodes accounting for X` of `go tool pprof -top`.
fn shown(top: &str) -> String {
    let key = "Showing nodes accounting for ";
    let at = top
        .find(key)
        .unwrap_or_else(|| panic!("nothing shown in\n{top}"));
    let rest = &top[at + key.len()..];
    rest.split([',', ' ']).next().unwrap().to_string()
}

#[test]
fn pprof_matches_golden_and_go_tool_pprof_reads_every_type_and_label() {
    let out = export(&["-f", "pprof"]);
    check("sampled.pprof.pb", &gunzip(&out));
    let Some(go) = common::go() else {
        return;
    };
    let dir = TempDir::new("export-sampled");
    let file = dir.join("sampled.pb.gz");
    std::fs::write(&file, &out).unwrap();
    // The default type is CPU time, as in a Go CPU profile.
    assert!(pprof(go, &dir, &["-top"], &file).contains("Type: cpu"));
    for t in [
        "samples",
        "cpu",
        "wall",
        "contentions",
        "delay",
        "alloc_objects",
        "alloc_space",
        "alloc_time",
    ] {
        let top = pprof(go, &dir, &["-top", "-sample_index", t], &file);
        assert!(top.contains(&format!("Type: {t}")), "{t}:\n{top}");
        assert_ne!(total(&top), "0", "{t}: nothing in\n{top}");
        assert!(top.contains("work+0x"), "{t}: no work frame in\n{top}");
    }
    // Every label, and every value of it, selects samples with -tagfocus.
    let tags = pprof(go, &dir, &["-tags", "-sample_index", "wall"], &file);
    for key in ["thread", "state", "phase"] {
        assert!(
            tags.contains(&format!(" {key}: Total")),
            "no {key} label:\n{tags}"
        );
    }
    let totals = state_totals();
    for (state, ns) in totals.iter().filter(|t| t.1 > 0) {
        assert!(
            tags.contains(&format!(": {state}\n")),
            "no state={state}:\n{tags}"
        );
        let focus = format!("-tagfocus=state={state}");
        let top = pprof(
            go,
            &dir,
            &["-top", "-sample_index=wall", &focus, "-unit=ns"],
            &file,
        );
        assert_eq!(shown(&top), format!("{ns}ns"), "state {state}:\n{top}");
    }
    let top = pprof(
        go,
        &dir,
        &["-top", "-sample_index=cpu", "-tagfocus=phase=build"],
        &file,
    );
    assert!(
        !shown(&top).starts_with('0'),
        "no CPU time in phase build:\n{top}"
    );
}

/// The speedscope app's static build (`npm install speedscope`: dist/release/index.html), from
/// STALLSCOPE_SPEEDSCOPE or where .ci/run installs it.
fn speedscope_app() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("STALLSCOPE_SPEEDSCOPE").map(PathBuf::from),
        Some(common::repo_file(
            "target/npm/node_modules/speedscope/dist/release",
        )),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find(|d| d.join("index.html").exists());
    have(
        "the speedscope app",
        found.is_some(),
        "npm install --prefix target/npm speedscope (as .ci/run does)",
    )
    .then(|| found.unwrap())
}

#[test]
fn speedscope_matches_golden_and_loads_in_the_real_app() {
    let out = export(&["-f", "speedscope"]);
    check("sampled.speedscope.json", &out);
    let doc: Value = serde_json::from_slice(&out).unwrap();
    let profiles = doc["profiles"].as_array().unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    for kind in ["sampled", "evented"] {
        assert!(
            profiles.iter().any(|p| p["type"] == kind),
            "no {kind} profile"
        );
    }
    for p in profiles {
        if p["type"] == "sampled" {
            let (s, w) = (
                p["samples"].as_array().unwrap(),
                p["weights"].as_array().unwrap(),
            );
            assert_eq!(s.len(), w.len());
            let ids = s.iter().flat_map(|s| s.as_array().unwrap());
            assert!(
                ids.map(|i| i.as_u64().unwrap())
                    .all(|i| (i as usize) < frames.len())
            );
        } else {
            // Well nested: every close matches the innermost open frame, times never go back.
            let (mut open, mut at) = (Vec::new(), 0.0);
            for e in p["events"].as_array().unwrap() {
                let t = e["at"].as_f64().unwrap();
                assert!(t >= at, "{e}");
                at = t;
                match e["type"].as_str().unwrap() {
                    "O" => open.push(e["frame"].clone()),
                    _ => assert_eq!(open.pop().as_ref(), Some(&e["frame"]), "{e}"),
                }
            }
            assert!(open.is_empty());
        }
    }
    let (Some(app), Some(chromium)) = (speedscope_app(), browser::chromium()) else {
        return;
    };
    let dir = TempDir::new("speedscope");
    let mut tools = browser::Devtools::open(chromium, &app.join("index.html"), dir.path());
    // Collect what the app reports from now on, then give it the file as its file input would.
    tools.eval(
        "window.__problems = []; \
         window.addEventListener('error', e => __problems.push('error: ' + e.message)); \
         window.addEventListener('unhandledrejection', e => __problems.push('rejected: ' + e.reason)); \
         for (const level of ['error', 'warn']) { const orig = console[level]; \
           console[level] = (...a) => { __problems.push(level + ': ' + a.join(' ')); orig(...a); }; }",
    );
    let load = format!(
        "(() => {{ const input = document.querySelector('input[type=file]'); if (!input) return false; \
         const t = new DataTransfer(); \
         t.items.add(new File([{}], 'sampled.speedscope.json', {{type: 'application/json'}})); \
         input.files = t.files; input.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})()",
        Value::from(String::from_utf8(out).unwrap())
    );
    assert_eq!(tools.eval(&load), true, "speedscope has no file input");
    let first = profiles[doc["activeProfileIndex"].as_u64().unwrap() as usize]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let shows = |tools: &mut browser::Devtools, text: &str| {
        let expr = format!("document.body.innerText.includes({})", Value::from(text));
        (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            tools.eval(&expr) == true
        })
    };
    assert!(
        shows(&mut tools, &first),
        "speedscope does not show the profile {first}: {}",
        tools.eval("document.body.innerText")
    );
    // The sandwich view lists the frames as a table: the shown profile's heaviest sample's
    // state (its root) and function (its leaf). Its tab is asked for again while waiting (the
    // app may not take it while it lays out the file).
    let active = &profiles[doc["activeProfileIndex"].as_u64().unwrap() as usize];
    let weights = active["weights"].as_array().unwrap();
    let heaviest = (0..weights.len())
        .max_by_key(|&i| weights[i].as_u64().unwrap())
        .unwrap();
    let stack = active["samples"][heaviest].as_array().unwrap();
    let name = |i: &Value| {
        frames[i.as_u64().unwrap() as usize]["name"]
            .as_str()
            .unwrap()
    };
    let (root, leaf) = (name(&stack[0]), name(&stack[stack.len() - 1]));
    assert!(root.starts_with('[') && root.ends_with(']'), "root {root}");
    for frame in [root, leaf] {
        let expr = format!(
            "(() => {{ const tab = [...document.querySelectorAll('div, span')].find(e => \
             e.childElementCount <= 1 && e.textContent.endsWith('Sandwich')); \
             if (tab) tab.click(); return document.body.innerText.includes({}); }})()",
            Value::from(frame)
        );
        let found = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            tools.eval(&expr) == true
        });
        assert!(
            found,
            "speedscope's sandwich view has no {frame}: {}",
            tools.eval("document.body.innerText")
        );
    }
    let problems = tools.eval("__problems");
    assert_eq!(
        problems,
        serde_json::json!([]),
        "speedscope reported problems"
    );
}

/// A real program whose threads spend their time in `spin` (tests/state_programs/compute_only.c):
/// the CPU flame graph's heaviest leaf (its top frame) is `spin`, with nearly all the CPU time.
#[test]
fn cpu_flame_graph_puts_the_hot_function_on_top() {
    let dir = TempDir::new("export-hot");
    let source = common::test_source("state_programs", "compute_only.c");
    let exe = common::compile_file(dir.path(), &source, &["-g"]);
    let (_, prof) = common::profile(dir.path(), "hot.prof", &[], &[&exe], 0);
    let out = Command::new(common::stallscope())
        .args(["export", "-f", "collapsed", "--weight", "cpu"])
        .arg(&prof)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::describe(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut leaves: std::collections::BTreeMap<&str, u64> = Default::default();
    for (frames, value) in folded(&text) {
        *leaves.entry(frames[frames.len() - 1]).or_default() += value;
    }
    let total: u64 = leaves.values().sum();
    let (top, ns) = leaves.iter().max_by_key(|l| *l.1).expect("CPU stacks");
    assert_eq!(*top, "spin", "heaviest leaf {top}:\n{text}");
    assert!(
        *ns as f64 > 0.9 * total as f64,
        "spin has {ns} of {total} ns:\n{text}"
    );
}
