//! `report`, `report --json` and `html` on a run of several processes (issue 12 item 9): given the
//! launched process's profile, its run directory or a directory of profiles, they show the process
//! tree, the figures and findings per program and the totals; a single profile reads as before.

mod common;
mod harness;

use common::*;
use harness::hostile_program;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn stallscope_out(args: &[&str], path: &Path) -> String {
    let out = Command::new(stallscope())
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stallscope {args:?} {}\n{}",
        path.display(),
        describe(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&stallscope_out(&["report", "--json"], path)).expect("JSON")
}

/// The processes of a run's JSON whose program is `name`.
fn processes<'a>(run: &'a Value, name: &str) -> Vec<&'a Value> {
    run["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["program"] == name)
        .collect()
}

fn parent_of<'a>(run: &'a Value, p: &Value) -> Option<&'a Value> {
    p["parent"].as_u64().map(|i| &run["processes"][i as usize])
}

#[test]
fn a_run_reads_as_a_tree_from_its_profile_its_directory_or_the_working_directory() {
    let dir = TempDir::new("tree-report");
    let bin = TempDir::new("tree-report-bin");
    let exe = hostile_program(bin.path(), "process_tree.c", &[]);
    let out = stallscope_run(dir.path(), &["-q"], &[&exe]);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    let root = prof_files(dir.path());
    assert_eq!(root.len(), 1, "one profile in the working directory");
    let root = &root[0];
    let run_dir = children_dirs(dir.path());
    assert_eq!(run_dir.len(), 1);
    let run_dir = &run_dir[0];

    // JSON on the root: the launched process's report, plus the run.
    let report = json_of(root);
    assert_eq!(report["schema"], "stallscope.report/1");
    assert_eq!(command_of(&report), [exe.to_str().unwrap()]);
    let run = &report["run"];
    let count = num(run, &["totals", "processes"]);
    // The root, sh and its ls, the leaf, the orphan and true. (The orphan's parent, which exits
    // at once without calling the allocator, has no profile today: issue 12 item 8.)
    assert!(count >= 6, "{run:#}");
    let launched = &run["processes"][run["launched"].as_u64().unwrap() as usize];
    assert_eq!(launched["program"], "process_tree");
    assert!(launched["parent"].is_null());
    assert_eq!(launched["exit_code"], 0);
    let sh = processes(run, "sh");
    assert_eq!(sh.len(), 1, "{run:#}");
    assert_eq!(sh[0]["exit_code"], 4);
    assert_eq!(parent_of(run, sh[0]).unwrap()["pid"], launched["pid"]);
    let ls = processes(run, "ls");
    assert_eq!(ls.len(), 1);
    assert_eq!(
        parent_of(run, ls[0]).unwrap()["pid"],
        sh[0]["pid"],
        "ls under sh"
    );
    assert_eq!(ls[0]["depth"], 2);
    let ours = processes(run, "process_tree");
    assert!(ours.len() >= 3, "root, leaf and orphan: {run:#}");
    let leaf = ours.iter().find(|p| p["exit_code"] == 3).expect("the leaf");
    assert_eq!(parent_of(run, leaf).unwrap()["pid"], launched["pid"]);
    // The orphan hangs under its real parent (the child that exited at once, which has a profile
    // of its own), not under the launched process: its profile names the parent it had when it
    // was forked and exec'd, not init or a subreaper that took it over.
    let orphan = ours.iter().find(|p| {
        parent_of(run, p)
            .is_some_and(|q| q["pid"] != launched["pid"] && q["program"] == "process_tree")
    });
    let orphan = orphan.unwrap_or_else(|| panic!("the orphan under its parent: {run:#}"));
    assert_eq!(orphan["adopted"], false, "{run:#}");
    assert_eq!(orphan["depth"], 2, "{run:#}");
    assert_eq!(
        num(run, &["totals", "alloc_calls"]),
        run["processes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| num(p, &["alloc_calls"]))
            .sum::<u64>(),
        "totals add up"
    );
    let programs: Vec<&str> = run["programs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["program"].as_str().unwrap())
        .collect();
    for p in ["process_tree", "sh", "ls", "true"] {
        assert!(programs.contains(&p), "{programs:?}");
    }

    // The run's directory gives the same run.
    let from_dir = json_of(run_dir);
    assert_eq!(from_dir["run"]["totals"], run["totals"]);
    assert_eq!(from_dir["pid"], report["pid"]);

    // The working directory (no root known): a forest of the same processes, not an error.
    let from_cwd = json_of(dir.path());
    assert_eq!(from_cwd["schema"], "stallscope.run/1");
    assert_eq!(num(&from_cwd["run"], &["totals", "processes"]), count);

    // The terminal report: totals, the tree, programs, then the launched process's report.
    let text = stallscope_out(&["report"], root);
    for expected in [
        "Process tree",
        "By program",
        "Findings by program",
        "the launched process",
        "stallscope profile",
        "ls /",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    assert!(
        text.find("Process tree") < text.find("stallscope profile"),
        "the run comes first"
    );

    // The page: the run's processes above the launched process's findings.
    let page = dir.join("run.html");
    let out = Command::new(stallscope())
        .args(["html", "-o"])
        .arg(&page)
        .arg(run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let section = html
        .find("Processes of this run")
        .expect("the run's section");
    assert!(section < html.find("id=\"findings\"").unwrap());
    assert!(
        html.contains(&format!("<td>{}</td>", ls[0]["pid"])),
        "every process is listed"
    );
}

#[test]
fn a_single_profile_reads_as_before() {
    let dir = TempDir::new("single-report");
    let (_, path) = profile(dir.path(), "one.prof", &[], &["true"], 0);
    assert!(
        children_dirs(dir.path()).is_empty(),
        "no run directory for one process"
    );
    let report = report_json(&path);
    assert!(report.get("run").is_none(), "no run section: {report:#}");
    let text = stallscope_out(&["report"], &path);
    assert!(!text.contains("Process tree"), "{text}");
}
