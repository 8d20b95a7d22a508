//! Builds the interposer (preload/*.c) into a shared library with the system C compiler, so that
//! the stallscope executable can carry it inside (see src/preload.rs), and generates the Rust side
//! of the contract with it from the C definitions: the profile format's constants and enumerations
//! (preload/ss_format.h) and the run options' table (preload/ss_options.def), by compiling and
//! running build/generate_rust.c (so sizes and offsets are the C compiler's own).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    println!("cargo:rerun-if-changed=preload");
    println!("cargo:rerun-if-changed=include");
    println!("cargo:rerun-if-changed=build");
    let compiler = cc::Build::new().get_compiler();
    build_interposer(&compiler, &out);
    generate_rust(&compiler, &out);
}

fn build_interposer(compiler: &cc::Tool, out: &Path) {
    let lib = out.join("libstallscope.so");
    let mut sources: Vec<PathBuf> = std::fs::read_dir("preload")
        .expect("preload/ directory")
        .map(|e| e.expect("preload entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
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
        // Every symbol bound at load: a fork child then binds none of the C library's functions
        // the interposer first calls in it (each lazy binding writes the GOT, a page copied for
        // the child, and runs the dynamic linker's lookup; docs/PERFORMANCE.md, Fork children).
        "-Wl,-z,now",
        // Headers, code and read-only data in one mapping rather than three: fork copies each
        // mapping of the process and a child unmaps each at exit, 1.5-2 us a fork apiece
        // (docs/PERFORMANCE.md, Fork children).
        "-Wl,-z,noseparate-code",
    ]);
    cmd.args(&sources)
        .arg("-o")
        .arg(&lib)
        .args(["-ldl", "-lpthread"]);
    let status = cmd
        .status()
        .expect("running the C compiler for the interposer");
    assert!(status.success(), "building the interposer failed: {cmd:?}");
    // Its content hash names the extracted copy (src/preload.rs): worked out here once, not
    // by every `stallscope run` (hashing 0.9 MB was 15% of the supervisor's start-up).
    let bytes = std::fs::read(&lib).expect("reading the built interposer");
    let hash = bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    std::fs::write(out.join("libstallscope.hash"), format!("{hash:016x}"))
        .expect("writing the hash");
}

fn generate_rust(compiler: &cc::Tool, out: &Path) {
    let generator = out.join("generate_rust");
    let mut cmd: Command = compiler.to_command();
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Ipreload"])
        .arg("build/generate_rust.c")
        .arg("-o")
        .arg(&generator);
    let status = cmd.status().expect("running the C compiler");
    assert!(
        status.success(),
        "building build/generate_rust.c failed: {cmd:?}"
    );
    for what in ["format", "options"] {
        let output = Command::new(&generator)
            .arg(what)
            .output()
            .expect("running build/generate_rust");
        assert!(
            output.status.success(),
            "generate_rust {what} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(out.join(format!("{what}_generated.rs")), &output.stdout)
            .expect("writing the generated Rust");
    }
}
