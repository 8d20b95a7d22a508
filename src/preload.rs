//! The interposer library, built by build.rs and carried inside this executable. It is written
//! once per content hash to a cache directory, from where LD_PRELOAD loads it.

use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

static LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libstallscope.so"));

/// FNV-1a of LIBRARY (enough to tell two builds of the library apart), in hex: build.rs works it
/// out when it builds the library.
static LIBRARY_HASH: &str = include_str!(concat!(env!("OUT_DIR"), "/libstallscope.hash"));

/// Where the library may be written, best first.
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
    for tmp in [std::env::temp_dir(), PathBuf::from("/tmp")] {
        let dir = tmp.join(format!("stallscope-{uid}"));
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// The path of the interposer, extracting it if this build's copy is not there yet.
/// `STALLSCOPE_PRELOAD_LIB` overrides it (for testing another build of the library).
///
/// A place every user can read is preferred: a program may change to another user (sudo -u,
/// a daemon dropping privileges) and exec, and the dynamic linker then prints an error into the
/// program's stderr if that user cannot open the preloaded library (home directories are often
/// private). Otherwise the first place that works.
pub fn library_path() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("STALLSCOPE_PRELOAD_LIB").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        // The dynamic linker would only print a warning into the program's stderr and run it
        // unprofiled: a comparison of two builds would then compare one with nothing.
        if !path.is_file() {
            anyhow::bail!(
                "STALLSCOPE_PRELOAD_LIB: {} is not a file (the interposer library to load)",
                path.display()
            );
        }
        // Reports know the interposer's own frames by its file name (symbols::is_own_module):
        // under another name they would read its lock steps as the program's code.
        if !crate::symbols::is_own_module(&path.to_string_lossy()) {
            eprintln!(
                "stallscope: warning: STALLSCOPE_PRELOAD_LIB: {} is not named libstallscope*.so; \
                 reports of this run will take the interposer's frames for the program's",
                path.display()
            );
        }
        return Ok(path);
    }
    let name = format!("libstallscope-{LIBRARY_HASH}.so");
    let dirs = cache_dirs();
    let mut last_err = None;
    for shared in [true, false] {
        for dir in &dirs {
            if shared && !readable_by_everyone(dir) {
                continue;
            }
            if let Err(e) = safe_to_use(dir) {
                last_err = Some(e);
                continue;
            }
            let path = dir.join(&name);
            if std::fs::metadata(&path).is_ok_and(|m| {
                m.len() == LIBRARY.len() as u64 && (!shared || m.permissions().mode() & 0o004 != 0)
            }) {
                return Ok(path);
            }
            match extract(dir, &path) {
                Ok(()) => return Ok(path),
                Err(e) => last_err = Some(e),
            }
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no cache directory")))
        .context("could not write the interposer library to a cache directory")
}

/// Whether every user could reach files in `dir` (created with mode 0755 if missing): each
/// existing directory on the way is searchable by others, on a file system that allows mapping
/// code (not mounted noexec).
fn readable_by_everyone(dir: &Path) -> bool {
    let mut existing = dir;
    while std::fs::metadata(existing).is_err() {
        match existing.parent() {
            Some(p) => existing = p,
            None => return false,
        }
    }
    let searchable = existing
        .ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0));
    searchable && !mounted_noexec(existing)
}

fn mounted_noexec(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: statvfs fills the zeroed structure for a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statvfs(c.as_ptr(), &mut st) != 0 || st.f_flag & libc::ST_NOEXEC != 0 }
}

/// A directory in a place others can write to (the temporary directory) must be our own and
/// writable by no one else, or another user could put a library there for us to preload.
fn safe_to_use(dir: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Ok(()); // created by us, below
    };
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o022 != 0 {
        anyhow::bail!(
            "{} is not a directory of this user's that only this user can write to",
            dir.display()
        );
    }
    Ok(())
}

fn extract(dir: &Path, path: &Path) -> Result<()> {
    if std::fs::metadata(dir).is_err() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // Readable by every user whatever the umask (see library_path); writable by us only.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    }
    // Write to a private name, then rename: concurrent runs never see a half-written library.
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        path.display().to_string().len()
    ));
    let mut file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(LIBRARY)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o644))?;
    file.sync_all().ok();
    drop(file);
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}
