//! The interposer library, built by build.rs and carried inside this executable. It is written
//! once per content hash to a cache directory, from where LD_PRELOAD loads it.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

static LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libstallscope.so"));

/// FNV-1a: enough to tell two builds of the library apart.
fn content_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

fn cache_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(dir).join("stallscope"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(home).join(".cache").join("stallscope"));
    }
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    dirs.push(std::env::temp_dir().join(format!("stallscope-{uid}")));
    dirs
}

/// The path of the interposer, extracting it if this build's copy is not there yet.
/// `STALLSCOPE_PRELOAD_LIB` overrides it (for testing another build of the library).
pub fn library_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("STALLSCOPE_PRELOAD_LIB").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let name = format!("libstallscope-{:016x}.so", content_hash(LIBRARY));
    let mut last_err = None;
    for dir in cache_dirs() {
        let path = dir.join(&name);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == LIBRARY.len() as u64) {
            return Ok(path);
        }
        match extract(&dir, &path) {
            Ok(()) => return Ok(path),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no cache directory")))
        .context("could not write the interposer library to a cache directory")
}

fn extract(dir: &std::path::Path, path: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Write to a private name, then rename: concurrent runs never see a half-written library.
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        path.display().to_string().len()
    ));
    let mut file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(LIBRARY)?;
    file.sync_all().ok();
    drop(file);
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}
