//! Child processes under `stallscope run`: fork + exec and posix_spawn children get their own
//! profile files, in the run's directory next to the launched process's profile
//! (`stallscope-NAME-PID.prof.children/`, named on stderr); `--no-children` profiles only the
//! launched process.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Runs `exe` under stallscope in `dir` (default profile names) and returns (stdout, stderr, every
/// profile of the run).
fn run_in(dir: &Path, run_args: &[&str], exe: &Path) -> (String, String, Vec<PathBuf>) {
    let out = stallscope_run(dir, run_args, &[exe]);
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        run_files(dir),
    )
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// The profile among `files` whose recorded command starts with `program` (by base name).
fn profiles_of<'a>(files: &'a [PathBuf], program: &str) -> Vec<(&'a PathBuf, serde_json::Value)> {
    files
        .iter()
        .map(|f| (f, report_json(f)))
        .filter(|(_, r)| {
            command_of(r)
                .first()
                .is_some_and(|c| Path::new(c).file_name().is_some_and(|n| n == program))
        })
        .collect()
}

fn check_child_profiles(source: &str, child_says: &str) {
    let dir = TempDir::new("children");
    let bin = TempDir::new("children-bin");
    let exe = compile(bin.path(), source, &[]);
    let stem = exe.file_name().unwrap().to_str().unwrap().to_string();
    let (stdout, stderr, files) = run_in(dir.path(), &[], &exe);
    assert_eq!(
        stdout,
        format!("{child_says}\nparent done\n"),
        "stdout passes through"
    );
    assert!(
        files.len() >= 2,
        "a profile for the parent and for the child: {files:?}\n{stderr}"
    );

    let parents = profiles_of(&files, &stem);
    assert_eq!(parents.len(), 1, "one profile of {stem}: {files:?}");
    let (parent_file, parent) = &parents[0];
    assert!(
        fn_stats(parent, "malloc").calls >= 1,
        "the parent's malloc(100) is counted"
    );
    assert_eq!(parent["exit_code"], 0, "parent exit code");
    let shells = profiles_of(&files, "sh");
    assert_eq!(shells.len(), 1, "one profile of the child `sh`: {files:?}");
    let (shell_file, shell) = &shells[0];
    assert_eq!(
        command_of(shell),
        ["sh", "-c", &format!("echo {child_says}")]
    );
    assert_ne!(shell["pid"], parent["pid"], "the child has its own pid");
    // One profile per run in the working directory, stallscope-<command name>-<pid>.prof; the
    // child's, with its own default name, in that profile's directory of the run.
    let root_name = format!("stallscope-{stem}-{}.prof", parent["pid"]);
    assert_eq!(file_name(parent_file), root_name, "default profile name");
    assert_eq!(
        prof_files(dir.path()),
        [dir.join(&root_name)],
        "the only profile in the working directory"
    );
    let run_dir = dir.join(&format!("{root_name}.children"));
    assert_eq!(children_dirs(dir.path()), std::slice::from_ref(&run_dir));
    assert_eq!(
        **shell_file,
        run_dir.join(format!("stallscope-sh-{}.prof", shell["pid"])),
        "the child's profile, in the run's directory"
    );
    assert!(
        stderr.contains(run_dir.to_str().unwrap()),
        "the run's directory is named on stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&root_name),
        "the parent's profile {} is named on stderr:\n{stderr}",
        parent_file.display()
    );
    // Every file in the directory opens, and the report accepts them all at once (a JSON array).
    let out = std::process::Command::new(stallscope())
        .args(["report", "--json"])
        .args(&files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        all.as_array().map(Vec::len),
        Some(files.len()),
        "one report per file"
    );

    // --no-children: the launched process only.
    let dir2 = TempDir::new("no-children");
    let (stdout, stderr, files) = run_in(dir2.path(), &["--no-children"], &exe);
    assert_eq!(
        stdout,
        format!("{child_says}\nparent done\n"),
        "stdout passes through"
    );
    assert_eq!(
        files.len(),
        1,
        "--no-children writes one profile: {files:?}\n{stderr}"
    );
    assert!(
        children_dirs(dir2.path()).is_empty(),
        "and no directory for other processes"
    );
    assert_eq!(
        profiles_of(&files, &stem).len(),
        1,
        "and it is the launched program's"
    );
}

#[test]
fn fork_and_exec_child_gets_its_own_profile() {
    check_child_profiles("fork_exec.c", "child");
}

#[test]
fn posix_spawn_child_gets_its_own_profile() {
    check_child_profiles("spawn.c", "spawned");
}

#[test]
fn shell_pipeline_profiles_every_command() {
    let dir = TempDir::new("pipeline");
    let out = stallscope_run(
        dir.path(),
        &[],
        &["sh", "-c", "seq 1 1000 | sort -r | head -5"],
    );
    assert_eq!(exit_code(&out), 0, "{}", describe(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "999\n998\n997\n996\n995\n"
    );
    let files = run_files(dir.path());
    assert_eq!(
        prof_files(dir.path()).len(),
        1,
        "one profile in the directory"
    );
    for program in ["seq", "sort", "head", "sh"] {
        assert_eq!(
            profiles_of(&files, program).len(),
            1,
            "one profile of {program}: {files:?}"
        );
    }
}

#[test]
fn vfork_and_exec_child_gets_its_own_profile() {
    check_child_profiles("vfork_exec.c", "child");
}

#[test]
fn exec_of_the_launched_process_gets_its_own_profile() {
    // perl replaces itself with sh, which exits 4: two images of one process, two profiles.
    let dir = TempDir::new("exec");
    let out = stallscope_run(
        dir.path(),
        &[],
        &[
            "perl",
            "-e",
            "print qq(before exec\\n); exec('sh', '-c', 'echo after exec; exit 4')",
        ],
    );
    assert_eq!(exit_code(&out), 4, "{}", describe(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "before exec\nafter exec\n"
    );
    let files = run_files(dir.path());
    let perl = profiles_of(&files, "perl");
    let sh = profiles_of(&files, "sh");
    assert_eq!(
        (perl.len(), sh.len()),
        (1, 1),
        "one profile per image: {files:?}"
    );
    // The last image's is the run's profile; the earlier image's is kept in the run's directory.
    let root = prof_files(dir.path());
    assert_eq!(
        root,
        [sh[0].0.clone()],
        "the last image is the run's profile"
    );
    let root_name = file_name(&root[0]);
    assert_eq!(
        *perl[0].0,
        dir.join(&format!("{root_name}.children/{root_name}.exec-1")),
    );
    assert_eq!(perl[0].1["pid"], sh[0].1["pid"], "the same process");
    assert_eq!(sh[0].1["exit_code"], 4, "the last image's exit code");
    assert_eq!(
        perl[0].1["complete"], true,
        "perl's image ended cleanly by exec"
    );
    assert!(
        fn_stats(&perl[0].1, "malloc").calls > 100,
        "perl allocates before exec"
    );
}

#[test]
fn fork_while_other_threads_allocate() {
    let dir = TempDir::new("fork-threads");
    let bin = TempDir::new("fork-threads-bin");
    let exe = compile(bin.path(), "fork_in_threads.c", &[]);
    let (stdout, stderr, files) = run_in(dir.path(), &[], &exe);
    assert_eq!(stdout, "ok\n");
    assert_eq!(files.len(), 21, "the parent and 20 children:\n{stderr}");
    let reports: Vec<serde_json::Value> = files.iter().map(|f| report_json(f)).collect();
    // The parent is the process whose pid is every other profile's ppid.
    let parent_pid = reports
        .iter()
        .map(|r| num(r, &["pid"]))
        .find(|&pid| {
            reports
                .iter()
                .filter(|r| num(r, &["pid"]) != pid)
                .all(|r| num(r, &["ppid"]) == pid)
        })
        .expect("one profile is the parent of all the others");
    let mut children = 0;
    for r in &reports {
        assert_eq!(r["exit_code"], 0, "{}", r["path"]);
        assert_eq!(r["complete"], true, "{}", r["path"]);
        if num(r, &["pid"]) == parent_pid {
            assert_eq!(
                r["threads"].as_array().map(Vec::len),
                Some(4),
                "main and 3 workers"
            );
            continue;
        }
        children += 1;
        // A fork child starts afresh: only its own 10 malloc(72), in its only thread.
        let m = fn_stats(r, "malloc");
        assert_eq!((m.calls, m.bytes), (10, 720), "child {}: {m:?}", r["pid"]);
        assert_eq!(fn_stats(r, "free").calls, 0, "child {}", r["pid"]);
        assert_eq!(
            r["threads"].as_array().map(Vec::len),
            Some(1),
            "child {}",
            r["pid"]
        );
    }
    assert_eq!(children, 20);
}

#[test]
fn every_way_of_exec_gives_each_image_its_profile() {
    // exec_ways.c replaces itself six times: execveat by a directory descriptor and by its own
    // descriptor (AT_EMPTY_PATH), fexecve, execle, execvpe, execv. Without a hook on execveat its
    // image closed no profile and every later image ran with the preload but no settings.
    let dir = TempDir::new("exec-ways");
    let bin = TempDir::new("exec-ways-bin");
    let exe = compile(bin.path(), "exec_ways.c", &[]);
    let plain = plain_run(dir.path(), &[&exe], |_| {});
    let (out, root) = profile(dir.path(), "ways.prof", &["-q"], &[&exe], 5);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "{}",
        describe(&out)
    );
    let files = run_files(dir.path());
    assert_eq!(files.len(), 7, "one profile per image: {files:?}");
    let mut steps = Vec::new();
    for f in &files {
        let r = report_json(f);
        let step: u64 = command_of(&r)
            .get(1)
            .map_or(0, |a| a.parse().expect("the step"));
        let last = step == 6;
        assert_eq!(
            *f == root,
            last,
            "the last image is the run's profile: {f:?}"
        );
        if !last {
            assert_eq!(
                *f,
                dir.join(&format!("ways.prof.children/ways.prof.exec-{}", step + 1)),
                "image {step}"
            );
        }
        assert_eq!(r["complete"], true, "image {step} ended cleanly: {f:?}");
        let mallocs = fn_stats(&r, "malloc").calls;
        let own = 1000 + 100 * step;
        assert!(
            (own..own + 50).contains(&mallocs),
            "image {step}: its own {own} calls and a few of glibc's, not {mallocs}"
        );
        steps.push(step);
    }
    steps.sort();
    assert_eq!(steps, [0, 1, 2, 3, 4, 5, 6]);
}
