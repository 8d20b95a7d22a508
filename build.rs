//! Builds the interposer (preload/*.c) into a shared library with the system C compiler, so that
//! the stallscope executable can carry it inside (see src/preload.rs).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let lib = out.join("libstallscope.so");
    let mut sources: Vec<PathBuf> = std::fs::read_dir("preload")
        .expect("preload/ directory")
        .map(|e| e.expect("preload entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    println!("cargo:rerun-if-changed=preload");
    println!("cargo:rerun-if-changed=include");

    let compiler = cc::Build::new().get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args([
        "-std=gnu11",
        "-O2",
        "-g",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        "-ftls-model=initial-exec",
        "-fno-omit-frame-pointer",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Werror",
        "-Iinclude",
        "-Wl,-z,nodelete",
    ]);
    cmd.args(&sources)
        .arg("-o")
        .arg(&lib)
        .args(["-ldl", "-lpthread"]);
    let status = cmd
        .status()
        .expect("running the C compiler for the interposer");
    assert!(status.success(), "building the interposer failed: {cmd:?}");
}
