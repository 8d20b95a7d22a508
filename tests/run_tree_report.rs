//! `report`, `report --json` and `html` on a run of several processes: given the
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
    // at once without calling the allocator, may leave no profile.)
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

/// A shell compiling C files two at a time: the run's CPUs busy, the compilers named by their
/// source file, no finding of a compiler on a share too small for the run.
#[test]
fn a_parallel_build_says_how_many_cpus_it_kept_busy_and_names_its_compilers() {
    let dir = TempDir::new("tree-report-build");
    let src = TempDir::new("tree-report-build-src");
    for i in 0..4 {
        // Enough code that cc1 works for a while at -O2.
        let mut text = String::new();
        for f in 0..150 {
            text.push_str(&format!(
                "int f{f}(int *a, int n) {{ int s = {i}; for (int k = 0; k < n; k++) {{ s += a[k] * {f} ^ (s >> 3); if (s & 1) s -= a[(k * 7) % n]; }} return s; }}\n"
            ));
        }
        std::fs::write(src.path().join(format!("unit{i}.c")), text).unwrap();
    }
    let script = format!(
        "cd {} && for p in 'unit0 unit1' 'unit2 unit3'; do for f in $p; do cc -O2 -c $f.c -o $f.o & done; wait; done",
        src.path().display()
    );
    let out = stallscope_run(dir.path(), &["-q"], &["sh", "-c", &script]);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    let root = &prof_files(dir.path())[0];
    let report = json_of(root);
    let run = &report["run"];
    let c = &run["concurrency"];
    let cpus = c["cpus"].as_f64().unwrap();
    let busy = c["mean_busy_cpus"].as_f64().unwrap();
    assert!(busy > 0.0 && busy <= cpus, "{c:#}");
    let bins = c["busy_cpus"].as_array().unwrap();
    assert!(!bins.is_empty(), "{c:#}");
    assert!(
        bins.iter()
            .all(|b| (0.0..=cpus).contains(&b.as_f64().unwrap())),
        "{c:#}"
    );
    // The CPU time over time adds up to the processes' CPU time (bins of the run's wall time).
    let bin_ns = num(c, &["bin_ns"]) as f64;
    let wall = num(run, &["totals", "wall_ns"]) as f64;
    let summed: f64 = bins.iter().map(|b| b.as_f64().unwrap()).sum::<f64>() * bin_ns;
    let cpu = num(run, &["totals", "cpu_ns"]) as f64;
    assert!(
        summed <= cpu * 1.05 + bin_ns && summed >= cpu * 0.5,
        "binned {summed} of {cpu} ns CPU over {wall} ns: {c:#}"
    );
    // Each compiler by its source file, never by its path.
    let names: Vec<&str> = run["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for i in 0..4 {
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("cc1 ") && n.ends_with(&format!("unit{i}.c"))),
            "{names:?}"
        );
    }
    assert!(names.iter().all(|n| !n.starts_with('/')), "{names:?}");
    if let Some(st) = c["longest_serial"].as_object() {
        assert!(st["end_ns"].as_u64() > st["begin_ns"].as_u64(), "{c:#}");
        assert!(st["mean_busy_cpus"].as_f64().unwrap() < 1.5, "{c:#}");
    }
    // No process but the launched one shows a finding on a stake under 1% of the run's wall.
    let launched = run["launched"].as_u64();
    for (i, p) in run["processes"].as_array().unwrap().iter().enumerate() {
        if Some(i as u64) == launched {
            continue;
        }
        for f in p["findings"].as_array().into_iter().flatten() {
            if let Some(stake) = f["stake_ns"].as_f64() {
                assert!(stake >= 0.01 * wall, "{f:#} in a run of {wall} ns");
            }
        }
    }
    let text = stallscope_out(&["report"], root);
    assert!(text.contains("CPUs busy"), "{text}");
    assert!(text.contains("cc1 unit"), "{text}");
}

/// A program whose processes rewrite their title over their whole argument and environment area
/// (PostgreSQL's backends, setproctitle): each profile has the command line the process started
/// with (the interposer copies it before main), so each process is named by its executable and
/// main argument, with no title and none of the zeroed rest of the area as empty arguments; the
/// child's profile is named after the program, not `stallscope--PID.prof`.
/// A process that rewrote its argument area with a title (PostgreSQL's roles, setproctitle) is
/// named by that title, its role, with the command line it started with beside it: its
/// program, its file and its JSON `command` are those of how it started.
#[test]
fn retitled_processes_are_named_by_their_title_and_their_original_command_line() {
    let dir = TempDir::new("tree-report-title");
    let bin = TempDir::new("tree-report-title-bin");
    let exe = hostile_program(bin.path(), "title_rewrite.c", &[]);
    let exe = exe.to_str().unwrap();
    let argv = [
        exe,
        "a-long-argument",
        "another-one",
        "and-more",
        "x",
        "y",
        "z",
    ];
    let out = stallscope_run(dir.path(), &["-q"], &argv);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    let root = &prof_files(dir.path())[0];
    let run = json_of(root)["run"].clone();
    let processes = run["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 2, "{run:#}");
    let mut titles: Vec<&str> = processes
        .iter()
        .filter_map(|p| p["title"].as_str())
        .collect();
    titles.sort();
    assert_eq!(titles, ["titled: main", "titled: worker"], "{run:#}");
    for p in processes {
        assert_eq!(p["command"], serde_json::json!(argv), "{run:#}");
        assert_eq!(p["program"], "title_rewrite", "{run:#}");
        assert_eq!(p["name"], p["title"], "{run:#}");
        let file = p["profiles"][0].as_str().unwrap();
        assert!(
            Path::new(file)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("stallscope-title_rewrite-"),
            "{file}"
        );
    }
    let text = stallscope_out(&["report"], root);
    for title in titles {
        assert!(
            text.contains(&format!(
                "{title} (started as title_rewrite a-long-argument)"
            )),
            "{text}"
        );
    }
    assert!(!text.contains("''"), "{text}");
}

/// A tree of more processes than the terminal shows: the busiest ones are shown with the
/// processes above them, the rest counted with the option that lists them, and
/// `--all-processes` lists every process of the JSON's tree.
#[test]
fn a_large_tree_shows_its_busiest_processes_and_lists_every_one_on_request() {
    let dir = TempDir::new("tree-report-large");
    // 70 shells under one make, one of them far busier than the others.
    let mut makefile = String::from("all:");
    for i in 0..70 {
        makefile.push_str(&format!(" t{i}"));
    }
    makefile.push('\n');
    for i in 0..70 {
        let loops = if i == 61 { 200_000 } else { 50 };
        makefile.push_str(&format!(
            "t{i}:\n\t@i=0; while [ $$i -lt {loops} ]; do i=$$((i+1)); done\n"
        ));
    }
    std::fs::write(dir.path().join("Makefile"), makefile).unwrap();
    let out = stallscope_run(dir.path(), &["-q"], &["make", "-s", "-j2"]);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    let root = &prof_files(dir.path())[0];
    let run = json_of(root)["run"].clone();
    let all = run["processes"].as_array().unwrap();
    assert!(all.len() > 70, "{} processes", all.len());
    let busiest = all
        .iter()
        .max_by_key(|p| p["cpu_ns"].as_u64().unwrap_or(0))
        .unwrap();
    let line_of = |text: &str, pid: u64| {
        text.lines()
            .any(|l| l.split_whitespace().next() == Some(&pid.to_string()))
    };
    let text = stallscope_out(&["report"], root);
    let tree = text
        .split("Process tree")
        .nth(1)
        .and_then(|t| t.split("By program").next())
        .unwrap();
    assert!(
        line_of(tree, busiest["pid"].as_u64().unwrap()),
        "the busiest process is shown: {busiest:#}\n{tree}"
    );
    assert!(
        tree.contains("more processes") && tree.contains("--all-processes"),
        "{tree}"
    );
    let text = stallscope_out(&["report", "--all-processes"], root);
    let tree = text
        .split("Process tree")
        .nth(1)
        .and_then(|t| t.split("By program").next())
        .unwrap();
    for p in all {
        assert!(line_of(tree, p["pid"].as_u64().unwrap()), "{p:#}\n{tree}");
    }
    assert!(!tree.contains("more processes"), "{tree}");
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
