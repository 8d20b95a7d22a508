//! The corpus of real scaling bugs (tests/real_bugs/<id>/case.json, docs/CASES.md) in
//! `stallscope demo`: `--list` lists its cases, and those marked `"demo": true` run beside the
//! seeds' four when what they need is installed: built with their own script, the before and the
//! after profiled with `stallscope run`, the before's findings, and `stallscope bench` of both
//! with 1 and 2 threads. A case whose needs are missing is named with the reason.

use super::progress;
use crate::util::Style;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct CorpusCase {
    pub id: String,
    pub title: String,
    /// Runs in the default `stallscope demo` (fast, and its build takes seconds).
    pub demo: bool,
    /// Why it cannot run here (what it needs is missing), if it cannot.
    pub missing: Option<String>,
    dir: PathBuf,
    json: Value,
}

/// The corpus's directory: `STALLSCOPE_CORPUS`, else tests/real_bugs of the source tree this
/// executable was built from, when it is still there.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("STALLSCOPE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_bugs"));
    dir.is_dir().then_some(dir)
}

/// Every case of the corpus, by id.
pub fn load() -> Vec<CorpusCase> {
    let Some(root) = corpus_dir() else {
        return Vec::new();
    };
    let mut cases: Vec<CorpusCase> = std::fs::read_dir(&root)
        .map(|d| d.filter_map(|e| e.ok()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| {
            let dir = e.path();
            let text = std::fs::read_to_string(dir.join("case.json")).ok()?;
            let json: Value = serde_json::from_str(&text).ok()?;
            let needs: Vec<&str> = json["needs"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            Some(CorpusCase {
                id: json["id"].as_str()?.to_string(),
                title: json["title"].as_str().unwrap_or("").to_string(),
                demo: json["demo"] == true,
                missing: missing(&needs),
                dir,
                json,
            })
        })
        .collect();
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    cases
}

/// What of `needs` is not installed, in words: `apt:PKG` a Debian package, `pip:NAME[==V]` a
/// Python package, anything else a command on PATH.
fn missing(needs: &[&str]) -> Option<String> {
    let quiet = |c: &mut Command| {
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
    };
    needs.iter().find_map(|need| {
        if let Some(pkg) = need.strip_prefix("apt:") {
            let out = quiet(Command::new("dpkg-query").args(["-W", "-f=${Status}", pkg]));
            let ok = out
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"));
            (!ok).then(|| format!("the Debian package {pkg} is not installed"))
        } else if let Some(spec) = need.strip_prefix("pip:") {
            let name = spec.split("==").next().unwrap_or(spec);
            let ok = quiet(Command::new("python3").args(["-m", "pip", "show", "-q", name]))
                .is_ok_and(|o| o.status.success());
            (!ok).then(|| format!("the Python package {spec} is not installed"))
        } else {
            let ok = quiet(Command::new(need).arg("--version")).is_ok();
            (!ok).then(|| format!("`{need}` is not installed"))
        }
    })
}

/// `--list`'s lines for the corpus.
pub fn list_lines(cases: &[CorpusCase]) -> Vec<String> {
    cases
        .iter()
        .map(|c| {
            let how = match (&c.missing, c.demo) {
                (Some(why), _) => format!("skipped: {why}"),
                (None, true) => "runs in `stallscope demo`".to_string(),
                (None, false) => format!("`stallscope demo {}`", c.id),
            };
            format!("{:<28} {} ({how})", c.id, c.title)
        })
        .collect()
}

/// A side's command line, `{build}` replaced by the build directory and the thread count (the
/// case's `threads`: an argument's index, or an environment variable) set to `{threads}` for
/// `stallscope bench --threads`.
fn command(case: &CorpusCase, side: &str, out: &Path, threads: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = case.json[side]["argv"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|s| s.replace("{build}", &out.display().to_string()))
                .collect()
        })
        .unwrap_or_default();
    if let (Some(n), Some(i)) = (threads, case.json["threads"]["arg"].as_u64())
        && let Some(a) = argv.get_mut(i as usize)
    {
        *a = n.to_string();
    }
    argv
}

fn side_env(case: &CorpusCase, side: &str) -> Vec<(String, String)> {
    case.json[side]["env"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Builds, profiles and benchmarks one corpus case in `dir`.
pub fn run(case: &CorpusCase, dir: &Path, quick: bool, style: Style) -> Result<()> {
    println!(
        "\n{}",
        style.bold(&format!("== {} (real bug): {}", case.id, case.title))
    );
    let source = case.json["source"].as_str().unwrap_or("");
    println!("  documented: {source}");
    if let Some(why) = &case.missing {
        println!("  skipped: {why}");
        return Ok(());
    }
    let out = dir.join(&case.id);
    if let Some(script) = case.json["build"].as_str() {
        progress(&format!("building: bash {script} {}", out.display()));
        let done = Command::new("bash")
            .arg(case.dir.join(script))
            .arg(&out)
            .current_dir(&case.dir)
            .stdin(Stdio::null())
            .output()
            .context("running bash")?;
        if !done.status.success() {
            bail!(
                "building {} failed:\n{}",
                case.id,
                String::from_utf8_lossy(&done.stderr)
            );
        }
    }
    let me = std::env::current_exe().context("cannot find the stallscope executable")?;
    for side in ["before", "after"] {
        let prof = dir.join(format!("{}-{side}.prof", case.id));
        let _ = std::fs::remove_file(&prof);
        let argv = command(case, side, &out, None);
        progress(&format!("profiling: stallscope run -- {}", argv.join(" ")));
        let status = Command::new(&me)
            .args(["run", "--quiet", "-o"])
            .arg(&prof)
            .arg("--")
            .args(&argv)
            .envs(side_env(case, side))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .context("starting `stallscope run`")?;
        if !status.success() {
            bail!("`stallscope run -- {}` failed ({status})", argv.join(" "));
        }
        let model = crate::model::Model::read(&prof)?;
        println!("\nFindings for the {side}:");
        if model.findings.is_empty() {
            println!("  (none)");
        }
        for line in crate::findings::render_list(&model.findings, style).lines() {
            println!("  {line}");
        }
    }
    // The thread count goes through `{threads}` (an argument) or, for a case that reads it from
    // its own variable, `env VAR={threads}`; a side's environment through `env` too.
    let words = |side: &str| {
        let mut env: Vec<String> = side_env(case, side)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if let Some(var) = case.json["threads"]["env"].as_str() {
            env.push(format!("{var}={{threads}}"));
        }
        let mut argv = command(case, side, &out, Some("{threads}"));
        if !env.is_empty() {
            argv.splice(0..0, std::iter::once("env".to_string()).chain(env));
        }
        shell_words::join(argv)
    };
    let runs = if quick { "3" } else { "5" };
    let mut bench = Command::new(&me);
    bench
        .args(["bench", "--no-progress", "--runs", runs, "--threads", "1,2"])
        .args(["-n", "before", "-n", "after"])
        .arg(words("before"))
        .arg(words("after"))
        .stdin(Stdio::null());
    progress(&format!(
        "benchmarking: stallscope bench --runs {runs} --threads 1,2 before after"
    ));
    let done = bench.output().context("starting `stallscope bench`")?;
    if !done.status.success() {
        bail!(
            "`stallscope bench` failed:\n{}",
            String::from_utf8_lossy(&done.stderr)
        );
    }
    println!("\nBenchmark (before against after, 1 and 2 threads):");
    for line in String::from_utf8_lossy(&done.stdout).lines() {
        println!("  {line}");
    }
    Ok(())
}
