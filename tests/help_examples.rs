//! Every example that `stallscope COMMAND --help` gives, and every `stallscope` command the
//! README shows, runs as written (./prog, prog.prof, PID and the README's program and profile
//! names standing for a real program, its profile and a running process) and succeeds; and
//! `stallscope help TOPIC` answers for every command and topic it lists.

mod common;

use common::{TempDir, compile, compile_file, describe, stallscope};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const COMMANDS: [&str; 9] = [
    "run", "attach", "report", "html", "export", "diff", "bench", "scale", "demo",
];

fn output(args: &[&str], dir: &Path) -> String {
    let out = Command::new(stallscope())
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stallscope {args:?}: {}",
        describe(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The example commands of a `--help` text: the indented lines that begin with `stallscope`
/// after "Examples:".
fn examples(help: &str) -> Vec<String> {
    help.split("Examples:")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("stallscope "))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A process to attach to, running for `seconds`.
struct Running(Child);

impl Running {
    fn start(prog: &Path, seconds: &str) -> Running {
        let child = Command::new(prog)
            .args(["2", seconds])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Past the loader and into its threads before an attach looks at it.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Running(child)
    }

    fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `line` (a command as a user types it) in `dir`, `stallscope` being the binary under
/// test; panics with its output when it fails.
fn run_line(line: &str, dir: &Path, pid: &str) {
    let words = shell_words::split(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let words: Vec<String> = words
        .into_iter()
        .map(|w| if w == "PID" { pid.to_string() } else { w })
        .collect();
    assert_eq!(words[0], "stallscope", "{line}");
    // stallscope never overwrites a profile: an example that names one the setup (or an example
    // before it) wrote writes it anew.
    if let Some(i) = words.iter().position(|w| w == "-o") {
        let _ = std::fs::remove_file(dir.join(&words[i + 1]));
    }
    let out = Command::new(stallscope())
        .args(&words[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "`{line}` failed: {}", describe(&out));
}

fn setup(dir: &Path) -> PathBuf {
    let prog = compile(dir, "help_prog.c", &["-O1", "-g", "-pthread"]);
    std::fs::rename(&prog, dir.join("prog")).unwrap();
    let prog = dir.join("prog");
    output(&["run", "-q", "-o", "prog.prof", "--", "./prog", "2"], dir);
    for copy in ["before.prof", "after.prof"] {
        std::fs::copy(dir.join("prog.prof"), dir.join(copy)).unwrap();
    }
    prog
}

#[test]
fn every_help_example_runs() {
    let dir = TempDir::new("help-examples");
    let prog = setup(dir.path());
    let running = Running::start(&prog, "30");
    let mut ran = 0;
    for command in COMMANDS {
        let help = output(&[command, "--help"], dir.path());
        let lines = examples(&help);
        assert!(
            !lines.is_empty(),
            "`stallscope {command} --help` gives no example:\n{help}"
        );
        for line in lines {
            // The whole demo takes minutes; its quick form is run below and in tests/demo_cases.rs.
            if line == "stallscope demo" {
                continue;
            }
            run_line(&line, dir.path(), &running.pid());
            ran += 1;
        }
    }
    assert!(ran >= 15, "{ran} examples ran");
}

#[test]
fn every_stallscope_command_of_the_readme_runs() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let dir = TempDir::new("help-readme");
    let prog = setup(dir.path());
    // The README's program names: its own examples (./myapp, ./myserver) and the bundled
    // quickstart.
    for name in ["myapp", "myserver"] {
        std::fs::copy(&prog, dir.join(name)).unwrap();
    }
    let quickstart = compile_file(
        dir.path(),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("demos/quickstart.c"),
        &["-O1", "-g", "-pthread"],
    );
    assert_eq!(quickstart, dir.join("quickstart"));
    let running = Running::start(&prog, "30");
    // The lines of its code blocks that run stallscope (a `$ ` prompt and `# ` comments cut).
    let mut lines = Vec::new();
    let mut in_code = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let line = line.trim_start_matches("$ ");
        if in_code && line.starts_with("stallscope ") {
            lines.push(line.split(" # ").next().unwrap().trim().to_string());
        }
    }
    assert!(lines.len() >= 4, "{lines:?}");
    for line in &lines {
        // A profile the README names by a pid of its own run: the one this run wrote.
        let line = if line.contains("stallscope-myapp-") {
            let written = std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|n| n.starts_with("stallscope-myapp-") && n.ends_with(".prof"))
                .unwrap_or_else(|| panic!("no profile of myapp before `{line}`"));
            line.split_whitespace()
                .map(|w| {
                    if w.starts_with("stallscope-myapp-") {
                        written.as_str()
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            line.clone()
        };
        run_line(&line, dir.path(), &running.pid());
    }
}

#[test]
fn help_answers_for_every_command_and_topic() {
    let dir = TempDir::new("help-topics");
    let top = output(&["help"], dir.path());
    for command in COMMANDS {
        assert!(top.contains(command), "{top}");
        let help = output(&["help", command], dir.path());
        assert!(help.contains("Examples:"), "help {command}: {help}");
        assert!(help.contains(&format!("stallscope {command}")), "{help}");
    }
    // The findings are the rules the report draws them by: each id has its own page.
    let findings = output(&["help", "findings"], dir.path());
    let ids: Vec<&str> = findings
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // Every rule of both rules files, a process's and a run's of several processes, has its
    // line in `help findings` and its place in docs/FINDINGS.md.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/FINDINGS.md")).unwrap();
    let mut rule_ids = Vec::new();
    for file in ["src/findings/rules.json", "src/findings/run_rules.json"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let rules = json["rules"].as_array().expect("rules");
        assert!(!rules.is_empty(), "{file}");
        for rule in rules {
            rule_ids.push(rule["id"].as_str().expect("id").to_string());
        }
    }
    for id in &rule_ids {
        assert!(
            ids.contains(&id.as_str()),
            "{id} not in help findings:\n{findings}"
        );
        assert!(
            doc.contains(&format!("`{id}`")),
            "{id} is not in docs/FINDINGS.md"
        );
    }
    assert_eq!(ids.len(), rule_ids.len(), "{findings}");
    for id in &ids {
        let one = output(&["help", "findings", id], dir.path());
        assert!(one.contains("cause:") && one.contains("remedy:"), "{one}");
        assert!(!one.contains("<kind_cause>"), "{one}");
    }
    let states = output(&["help", "states"], dir.path());
    for key in common::STATE_KEYS {
        assert!(states.contains(key), "{states}");
    }
    let out = Command::new(stallscope())
        .args(["help", "no-such-topic"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Topics"),
        "{}",
        describe(&out)
    );
}
