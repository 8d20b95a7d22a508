//! `stallscope export` on a fresh, symbolized profile of tests/golden/work.c: function names in
//! the collapsed stacks and in `go tool pprof -top`.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

/// tests/golden/work.c, with the frame-pointer and include flags the golden profile was made with.
fn compile_work(dir: &TempDir) -> PathBuf {
    compile_file(
        dir.path(),
        &test_source("golden", "work.c"),
        &["-g", "-fno-omit-frame-pointer", &include_flag()],
    )
}

fn export(args: &[&str], file: &std::path::Path) -> Vec<u8> {
    let out = Command::new(stallscope())
        .arg("export")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    out.stdout
}

#[test]
fn exports_name_the_programs_functions() {
    let dir = TempDir::new("export-live");
    let exe = compile_work(&dir);
    let (_, prof) = profile(
        dir.path(),
        "work.prof",
        &[],
        &[exe.to_str().unwrap(), "20000", "2000"],
        0,
    );

    let calls =
        String::from_utf8(export(&["-f", "collapsed", "--weight", "calls"], &prof)).unwrap();
    assert!(
        calls
            .lines()
            .any(|l| l.contains("worker;make_record;malloc ")),
        "no worker;make_record;malloc stack in\n{calls}"
    );
    let record_calls: u64 = calls
        .lines()
        .filter(|l| l.contains(";make_record;"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // 2 threads x 20000 records; stacks are sampled, so the estimate is within a margin.
    assert!(
        (20_000..=60_000).contains(&record_calls),
        "make_record calls estimated at {record_calls}"
    );
    let waits =
        String::from_utf8(export(&["-f", "collapsed", "--weight", "lock-wait"], &prof)).unwrap();
    for line in waits.lines() {
        assert!(line.contains(";worker;mutex wait "), "{line}");
    }

    let Some(go) = common::go() else {
        return;
    };
    let pb = dir.join("work.pb.gz");
    let out = Command::new(stallscope())
        .args(["export", "-f", "pprof", "-o"])
        .arg(&pb)
        .arg(&prof)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let top = Command::new(go)
        .args(["tool", "pprof", "-top", "-sample_index", "alloc_objects"])
        .arg(&pb)
        .env("PPROF_TMPDIR", dir.path())
        .env("HOME", dir.path())
        // Go builds `pprof` on first use: keep its build cache between runs.
        .env("GOCACHE", common::repo_file("target/go-cache"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&top.stdout);
    assert!(
        top.status.success(),
        "{}",
        String::from_utf8_lossy(&top.stderr)
    );
    for function in ["make_record", "make_buffer", "worker", "malloc"] {
        assert!(
            text.contains(function),
            "no {function} in go tool pprof -top:\n{text}"
        );
    }
}
