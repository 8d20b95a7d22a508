//! Programs from the machine give the same stdout and exit status with and without
//! `stallscope run`: python3 with threads, git, gcc (with its children), sqlite3, perl and shell
//! pipelines. Each plain run and profiled run works in its own directory; the profiles of the
//! profiled run land in that run's working directory (its children's in the run's directory).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Environment that makes git deterministic and independent of the user's configuration.
fn git_env(c: &mut Command, home: &Path) {
    c.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05+00:00")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05+00:00")
        .env("LC_ALL", "C")
        .env("TZ", "UTC");
}

/// Runs `cmd` plainly in `plain_dir` and under stallscope (default options, profiles written to
/// `profiled_dir`), asserts equal stdout and exit status, and returns both outputs.
fn compare(
    plain_dir: &Path,
    profiled_dir: &Path,
    cmd: &[&str],
    env: impl Fn(&mut Command),
) -> (Output, Output) {
    let plain = plain_run(plain_dir, cmd, &env);
    let before = prof_files(profiled_dir).len();
    let profiled = stallscope_run_with(profiled_dir, &[], cmd, &env);
    assert!(
        prof_files(profiled_dir).len() > before,
        "the profiled run of {cmd:?} wrote no profile\n{}",
        describe(&profiled)
    );
    assert_eq!(
        profiled.status.code(),
        plain.status.code(),
        "exit status of {cmd:?}\nplain: {}\nprofiled: {}",
        describe(&plain),
        describe(&profiled)
    );
    assert!(
        profiled.stdout == plain.stdout,
        "stdout of {cmd:?} differs\nplain: {}\nprofiled: {}",
        describe(&plain),
        describe(&profiled)
    );
    (plain, profiled)
}

/// Names of the programs that wrote the profiles of the runs in `dir` (base name of each
/// command's argv[0]).
fn profiled_programs(dir: &Path) -> Vec<String> {
    run_files(dir)
        .iter()
        .map(|f| {
            let cmd = command_of(&report_json(f));
            let first = cmd.first().cloned().unwrap_or_default();
            Path::new(&first)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(first)
        })
        .collect()
}

const PYTHON_SCRIPT: &str = r#"
import hashlib, sys, threading

results = [None] * 4

def work(i):
    h = hashlib.sha256()
    total = 0
    for n in range(20000 * (i + 1)):
        total += n * n % 7919
        if n % 1000 == 0:
            h.update(str(total).encode())
    words = sorted({"w%d" % (n * 31 % 997) for n in range(5000)})
    results[i] = (i, total, h.hexdigest()[:16], len(words), words[:3])

threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for r in results:
    print(r)
sys.exit(3)
"#;

#[test]
fn python3_with_threads() {
    let python = python3();
    if !have_tool(&python, &["--version"], "python3") {
        return;
    }
    let (a, b) = (TempDir::new("py-plain"), TempDir::new("py-prof"));
    let script = a.join("threads.py");
    std::fs::write(&script, PYTHON_SCRIPT).unwrap();
    let (_, profiled) = compare(
        a.path(),
        b.path(),
        &[&python, script.to_str().unwrap()],
        |_| {},
    );
    assert_eq!(profiled.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&profiled.stdout).lines().count(), 4);
    let files = run_files(b.path());
    assert_eq!(files.len(), 1, "python3 starts no other process: {files:?}");
    let report = report_json(&files[0]);
    let threads = report["threads"].as_array().expect("threads").len();
    assert!(threads >= 5, "main and four worker threads: {threads}");
    assert!(allocation_calls(&report) > 1000, "python allocates");
    assert_eq!(report["exit_code"], 3);
}

#[test]
fn git_in_a_temporary_repository() {
    if !have_tool("git", &["--version"], "git") {
        return;
    }
    let (a, b) = (TempDir::new("git-plain"), TempDir::new("git-prof"));
    let (ra, rb) = (a.join("repo"), b.join("repo"));
    let home = TempDir::new("git-home");
    let env = |c: &mut Command| git_env(c, home.path());
    let steps: Vec<Vec<String>> = vec![
        vec!["init", "-q", "-b", "main", "{repo}"],
        vec!["-C", "{repo}", "add", "."],
        vec!["-C", "{repo}", "commit", "-q", "-m", "first commit"],
        vec![
            "-C",
            "{repo}",
            "commit",
            "--allow-empty",
            "-m",
            "second commit",
        ],
        vec!["-C", "{repo}", "log", "--stat", "--format=%H %an %ad %s"],
        vec!["-C", "{repo}", "rev-list", "--count", "HEAD"],
        vec!["-C", "{repo}", "cat-file", "-p", "HEAD~1:hello.txt"],
        vec!["-C", "{repo}", "show", "--no-such-option"],
    ]
    .into_iter()
    .map(|s| s.into_iter().map(String::from).collect())
    .collect();
    // The profiles go to a directory next to the repository, never into it.
    let (pa, pb) = (a.join("profiles"), b.join("profiles"));
    for dir in [&pa, &pb] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for (i, step) in steps.iter().enumerate() {
        if i == 1 {
            for repo in [&ra, &rb] {
                std::fs::write(repo.join("hello.txt"), "hello\nworld\n").unwrap();
                std::fs::write(
                    repo.join("numbers.txt"),
                    (1..200).map(|n| format!("{n}\n")).collect::<String>(),
                )
                .unwrap();
            }
        }
        let args = |repo: &PathBuf| -> Vec<String> {
            let mut v = vec!["git".to_string()];
            v.extend(
                step.iter()
                    .map(|s| s.replace("{repo}", repo.to_str().unwrap())),
            );
            v
        };
        let (cmd_a, cmd_b) = (args(&ra), args(&rb));
        let plain = plain_run(&pa, &cmd_a, env);
        let profiled = stallscope_run_with(&pb, &[], &cmd_b, env);
        assert_eq!(
            profiled.status.code(),
            plain.status.code(),
            "git {step:?}\n{}",
            describe(&profiled)
        );
        assert!(
            profiled.stdout == plain.stdout,
            "stdout of git {step:?}\nplain: {}\nprofiled: {}",
            describe(&plain),
            describe(&profiled)
        );
    }
    // The commit hashes depend on content, author, committer and dates only: identical.
    let log = plain_run(
        &pb,
        &["git", "-C", rb.to_str().unwrap(), "log", "--format=%H"],
        env,
    );
    assert_eq!(String::from_utf8_lossy(&log.stdout).lines().count(), 2);
    assert!(!prof_files(&pb).is_empty(), "profiles were written");
}

#[test]
fn gcc_compiles_with_children_profiled() {
    if !have_tool("gcc", &["--version"], "gcc") {
        return;
    }
    let (a, b) = (TempDir::new("gcc-plain"), TempDir::new("gcc-prof"));
    let source = "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 6 * 7); return 0; }\n";
    for dir in [&a, &b] {
        std::fs::write(dir.join("hello.c"), source).unwrap();
    }
    compare(
        a.path(),
        b.path(),
        &["gcc", "-O1", "-o", "hello", "hello.c"],
        |_| {},
    );
    // The compiled programs are the same bytes.
    let (ea, eb) = (
        std::fs::read(a.join("hello")).unwrap(),
        std::fs::read(b.join("hello")).unwrap(),
    );
    assert!(
        ea == eb,
        "gcc produced different executables with and without stallscope"
    );
    let out = plain_run(b.path(), &[b.join("hello").to_str().unwrap()], |_| {});
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\n");
    // gcc's children each wrote a profile: the driver, cc1, as and the linker (collect2 and ld).
    let programs = profiled_programs(b.path());
    for expected in ["gcc", "cc1", "as", "collect2", "ld"] {
        assert!(
            programs.iter().any(|p| p == expected),
            "a profile of {expected} among {programs:?}"
        );
    }
    // An error: same diagnostics status.
    std::fs::write(
        a.join("bad.c"),
        "int main(void) { return undefined_name; }\n",
    )
    .unwrap();
    std::fs::write(
        b.join("bad.c"),
        "int main(void) { return undefined_name; }\n",
    )
    .unwrap();
    let (plain, _) = compare(a.path(), b.path(), &["gcc", "-c", "bad.c"], |_| {});
    assert_eq!(plain.status.code(), Some(1));
}

#[test]
fn sqlite3_query() {
    if !have_tool("sqlite3", &["-version"], "sqlite3") {
        return;
    }
    let (a, b) = (TempDir::new("sqlite-plain"), TempDir::new("sqlite-prof"));
    let sql = "CREATE TABLE t(n INTEGER, s TEXT); \
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000) \
        INSERT INTO t SELECT x, printf('row-%05d', x * 7 % 5000) FROM c; \
        CREATE INDEX ts ON t(s); \
        SELECT count(*), sum(n), min(s), max(s) FROM t; \
        SELECT n % 10 AS k, count(*), group_concat(n, ',') FILTER (WHERE n < 60) FROM t GROUP BY k ORDER BY k;";
    let (plain, _) = compare(a.path(), b.path(), &["sqlite3", "db.sqlite", sql], |_| {});
    let out = String::from_utf8_lossy(&plain.stdout);
    assert!(
        out.starts_with("5000|12502500|row-00000|row-04999\n"),
        "{out}"
    );
    // A failing statement: same status (1) and output.
    let (plain, _) = compare(
        a.path(),
        b.path(),
        &["sqlite3", ":memory:", "SELECT * FROM missing;"],
        |_| {},
    );
    assert_ne!(plain.status.code(), Some(0));
}

#[test]
fn perl_one_liner() {
    if !have_tool("perl", &["-v"], "perl") {
        return;
    }
    let (a, b) = (TempDir::new("perl-plain"), TempDir::new("perl-prof"));
    let script = r#"my %h; $h{$_ % 97} .= "$_," for 1..20000; print join("\n", map { "$_=" . length($h{$_}) } sort { $a <=> $b } keys %h), "\n"; exit 5;"#;
    let (plain, _) = compare(a.path(), b.path(), &["perl", "-e", script], |_| {});
    assert_eq!(plain.status.code(), Some(5));
    assert_eq!(String::from_utf8_lossy(&plain.stdout).lines().count(), 97);
}

#[test]
fn shell_pipelines() {
    let (a, b) = (TempDir::new("sh-plain"), TempDir::new("sh-prof"));
    for cmd in [
        "seq 1 1000 | sort -r | head -5",
        "seq 1 20000 | awk '{ s += $1 } END { print s }' | tr 0-9 a-j",
        "yes abc | head -c 100000 | wc -c; exit 9",
        "for i in 1 2 3; do echo $i; done | tac",
    ] {
        compare(a.path(), b.path(), &["sh", "-c", cmd], |c| {
            c.env("LC_ALL", "C");
        });
    }
}
