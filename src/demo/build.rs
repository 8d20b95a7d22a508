//! Writes the embedded case sources into the demo's directory and compiles them with the system
//! C++ compiler (`CXX`, else `g++`).

use super::cases::{CaseStudy, HEADERS};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub fn compiler() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "g++".to_string())
}

/// Fails with an install hint unless the compiler runs.
pub fn check_compiler(cxx: &str) -> Result<()> {
    let works = Command::new(cxx)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        bail!(
            "the C++ compiler `{cxx}` could not be run: the case studies are C++17 programs built \
             on this machine. Install g++ (apt-get install g++) or set CXX to a C++ compiler"
        );
    }
    Ok(())
}

/// Compiles every case (concurrently: the compiles dominate the demo's set-up) and returns the
/// executables in the order of `cases`.
pub fn build_all(cxx: &str, dir: &Path, cases: &[&CaseStudy]) -> Result<Vec<PathBuf>> {
    for (name, text) in HEADERS {
        std::fs::write(dir.join(name), text)?;
    }
    let mut jobs: Vec<(PathBuf, Child)> = Vec::new();
    for case in cases {
        let source = dir.join(case.file);
        std::fs::write(&source, case.source)
            .with_context(|| format!("writing {}", source.display()))?;
        let exe = dir.join(case.program());
        super::progress(&format!(
            "building: {cxx} -std=c++17 -O2 -g -pthread {}",
            source.display()
        ));
        let child = Command::new(cxx)
            .args(["-std=c++17", "-O2", "-g", "-pthread", "-I"])
            .arg(dir)
            .arg("-o")
            .arg(&exe)
            .arg(&source)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("running the C++ compiler `{cxx}`"))?;
        jobs.push((exe, child));
    }
    let mut exes = Vec::new();
    for (exe, child) in jobs {
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "{} did not compile:\n{}",
                exe.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        exes.push(exe);
    }
    Ok(exes)
}
