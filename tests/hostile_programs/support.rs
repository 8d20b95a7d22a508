//! Shared helpers of the `invisible_*` integration tests: compiling the hostile programs of
//! tests/hostile_programs/ and running each one with and without `stallscope run`, to compare
//! what the program does (exit status, signal, output).
#![allow(dead_code)] // each test file uses a different subset

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Compiles tests/hostile_programs/`name`.c into `dir`.
pub fn hostile(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile_programs")
        .join(format!("{name}.c"));
    compile_file(dir, &src, &[])
}

/// How a process ended: its exit code, or the signal that killed it.
pub fn ending(out: &Output) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (out.status.code(), out.status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (_, Some(sig)) => format!("signal {sig}"),
        _ => "unknown".into(),
    }
}

/// Runs `cmd` plainly and under `stallscope run RUN_ARGS -o DIR/NAME` in `dir`, and asserts
/// that both end the same way with the same standard output; returns the profiled run's output
/// and its profile path.
pub fn same_as_plain(dir: &Path, name: &str, run_args: &[&str], cmd: &[&str]) -> (Output, PathBuf) {
    let plain = plain_run(dir, cmd, |_| {});
    let path = dir.join(name);
    let mut args = vec!["-o", path.to_str().unwrap()];
    args.extend_from_slice(run_args);
    let profiled = stallscope_run(dir, &args, cmd);
    assert_eq!(
        ending(&profiled),
        ending(&plain),
        "the program ends differently under stallscope\n{}",
        describe(&profiled)
    );
    assert_eq!(
        String::from_utf8_lossy(&profiled.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "the program's output differs under stallscope\n{}",
        describe(&profiled)
    );
    (profiled, path)
}

/// Every profile file under `dir`, in subdirectories too (where children's profiles go).
pub fn all_profiles(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "prof")
                || p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".prof."))
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
