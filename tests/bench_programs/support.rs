//! Shared helpers of the `bench_*` integration tests.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn stallscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stallscope"))
}

/// Runs `stallscope bench ARGS... --export-json FILE --no-progress` and returns the
/// parsed JSON and the terminal output, failing the test on a non-zero exit.
pub fn bench_json(name: &str, args: &[&str]) -> (serde_json::Value, String) {
    let json_path = scratch_dir().join(format!("{name}.json"));
    let output = stallscope()
        .arg("bench")
        .args(args)
        .arg("--export-json")
        .arg(&json_path)
        .arg("--no-progress")
        .output()
        .expect("start stallscope");
    assert_success(&output);
    let json = std::fs::read(&json_path).expect("JSON export written");
    (
        serde_json::from_slice(&json).expect("valid JSON export"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

pub fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "stallscope failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

pub fn scratch_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-tests");
    std::fs::create_dir_all(&dir).expect("create scratch directory");
    dir
}

pub fn program_source(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bench_programs")
        .join(file)
}

/// Compiles a helper program; `None` (with the reason printed) when the compiler or
/// a library is not installed, so the caller can skip loudly.
pub fn compile(compiler: &str, source: &str, output: &str, libraries: &[&str]) -> Option<PathBuf> {
    let binary = scratch_dir().join(output);
    let result = Command::new(compiler)
        .arg("-O2")
        .arg("-o")
        .arg(&binary)
        .arg(program_source(source))
        .args(libraries)
        .output();
    match result {
        Err(error) => {
            eprintln!("SKIPPED: cannot run {compiler}: {error}");
            None
        }
        Ok(out) if !out.status.success() => {
            eprintln!(
                "SKIPPED: {compiler} could not build {source} (missing library?):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
        Ok(_) => Some(binary),
    }
}

pub fn f64_of(value: &serde_json::Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("`{key}` missing or not a number in {value}"))
}
