//! Whether a program can run with the interposer preloaded: its path resolved, its image and loader
//! checked (static, another C library, a glibc too old), else it runs without a profile.

use super::*;

/// Finds the program the way execvp would.
pub(super) fn resolve_program(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.exists().then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What the program does with our preload.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Preload {
    /// glibc's loader loads it.
    Takes,
    /// Its loader is not glibc's (musl's, bionic's), or is a glibc older than the interposer
    /// needs: our library would stop it from starting, so it runs as it would without
    /// stallscope; why, in words ("its loader is not glibc's (...)").
    Foreign(String),
}

/// The loader of glibc for x86-64, the only one our library can be loaded by, whatever directory
/// it is installed in (a glibc under its own prefix has one too).
pub(super) const GLIBC_LOADER: &str = "ld-linux-x86-64.so.2";

/// A program whose loader is not glibc's (or too old a glibc's), or a loader asked only to report (`--list`), runs
/// exactly as it would without stallscope: the same process (exec, not a child), environment,
/// signals and exit status; one line (`note`) says so.
pub(super) fn run_unprofiled(command: &[String], note: &str) -> Result<i32> {
    eprintln!("stallscope: note: {note}");
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]);
    // SAFETY: async-signal-safe calls only, between fork-less exec set-up and exec.
    unsafe {
        cmd.pre_exec(|| {
            signals::restore_in_child();
            Ok(())
        });
    }
    let e = cmd.exec();
    eprintln!("stallscope: cannot run {}: {e}", command[0]);
    Ok(if e.kind() == std::io::ErrorKind::PermissionDenied {
        126
    } else {
        127
    })
}

/// When `program` is glibc's loader and its options (`args`, up to the program it would run) ask
/// it to report rather than run a program, that option: `--list` (what `ldd` runs: our library
/// would be listed among the program's), `--verify`, `--help`, `--version`, `--list-tunables`,
/// `--list-diagnostics`. The loader reads its options up to the first word that is not one.
pub(super) fn loader_runs_no_program<'a>(program: &Path, args: &'a [String]) -> Option<&'a str> {
    if program.file_name()? != GLIBC_LOADER {
        return None;
    }
    const REPORTS: &[&str] = &[
        "--list",
        "--verify",
        "--help",
        "--version",
        "--list-tunables",
        "--list-diagnostics",
    ];
    const TAKE_A_VALUE: &[&str] = &[
        "--library-path",
        "--inhibit-rpath",
        "--audit",
        "--preload",
        "--argv0",
        "--glibc-hwcaps-prepend",
        "--glibc-hwcaps-mask",
    ];
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if REPORTS.contains(&word.as_str()) {
            return Some(word);
        }
        if TAKE_A_VALUE.contains(&word.as_str()) {
            words.next();
        } else if word != "--inhibit-cache" {
            return None; // the program it runs
        }
    }
    None
}

/// Whether the dynamic linker will honour LD_PRELOAD for this program (following `#!`).
pub(super) fn check_preloadable(
    program: &Path,
    depth: u32,
) -> std::result::Result<Preload, String> {
    let meta = std::fs::metadata(program).map_err(|e| e.to_string())?;
    let mode = meta.permissions().mode();
    if mode & 0o6000 != 0 {
        return Err(
            "it is setuid or setgid, and the dynamic linker ignores LD_PRELOAD for such programs"
                .into(),
        );
    }
    let mut head = vec![0u8; 4096];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(program).map_err(|e| e.to_string())?;
        f.read(&mut head).map_err(|e| e.to_string())?
    };
    head.truncate(n);
    if head.starts_with(b"#!") && depth < 4 {
        let line = head[2..].split(|&b| b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        if let Some(interp) = text.split_whitespace().next() {
            return check_preloadable(Path::new(interp), depth + 1);
        }
        return Ok(Preload::Takes);
    }
    if !head.starts_with(b"\x7fELF") {
        return Ok(Preload::Takes); // a script without #! runs under /bin/sh, which takes the preload
    }
    // Only the headers are read: a program of hundreds of megabytes (node, chromium, a debug
    // build) read whole cost the run about as long as the program's own start.
    let file = std::fs::File::open(program).map_err(|e| e.to_string())?;
    let is_loader = program
        .file_name()
        .is_some_and(|n| n.to_string_lossy() == GLIBC_LOADER);
    elf_check(&object::ReadCache::new(file), is_loader, || {
        std::fs::read(program).ok()
    })
}

/// Why the interposer cannot be loaded into a process running the ELF image in `file` (`name`:
/// the image's file name, which tells glibc's loader; `whole`: its bytes, read only for the
/// loader), if it cannot: what `run` checks of a program before starting it (a 64-bit x86-64
/// image, dynamically linked, by glibc's loader, of a glibc recent enough), for `attach`.
pub(crate) fn image_refusal(
    file: std::fs::File,
    name: Option<&std::ffi::OsStr>,
    whole: impl FnOnce() -> Option<Vec<u8>>,
) -> Option<String> {
    let is_loader = name.is_some_and(|n| n.to_string_lossy() == GLIBC_LOADER);
    match elf_check(&object::ReadCache::new(file), is_loader, whole) {
        Ok(Preload::Takes) => None,
        Ok(Preload::Foreign(why)) | Err(why) => Some(why),
    }
}

/// `is_loader`: the file is named like glibc's loader (`ld-linux-x86-64.so.2 ./prog` runs the
/// program through it, and it honours LD_PRELOAD as it does when the kernel starts it); only then
/// is the whole file read (`whole`), for the glibc release it defines.
pub(super) fn elf_check<'a, R: object::ReadRef<'a>>(
    data: R,
    is_loader: bool,
    whole: impl FnOnce() -> Option<Vec<u8>>,
) -> std::result::Result<Preload, String> {
    use object::elf::FileHeader64;
    use object::read::elf::{FileHeader, ProgramHeader};
    let not_elf64 = || "it is not a 64-bit ELF program, and the interposer is built for x86-64";
    let header = FileHeader64::<object::Endianness>::parse(data).map_err(|_| not_elf64())?;
    let endian = header.endian().map_err(|_| not_elf64())?;
    if header.e_machine(endian) != object::elf::EM_X86_64 {
        return Err("it is not an x86-64 program".into());
    }
    let headers = header
        .program_headers(endian, data)
        .map_err(|_| not_elf64())?;
    let interp = headers.iter().find_map(|ph| {
        (ph.p_type(endian) == object::elf::PT_INTERP)
            .then(|| ph.data(endian, data).ok())
            .flatten()
    });
    let Some(interp) = interp else {
        if is_loader && header.e_type(endian) == object::elf::ET_DYN {
            return Ok(whole()
                .and_then(|d| old_glibc(&d))
                .map_or(Preload::Takes, Preload::Foreign));
        }
        return Err("it is statically linked, so no library can be preloaded into it".into());
    };
    let interp = String::from_utf8_lossy(interp.split(|&b| b == 0).next().unwrap_or_default());
    if interp.rsplit('/').next() != Some(GLIBC_LOADER) {
        return Ok(Preload::Foreign(format!(
            "its loader is not glibc's ({interp})"
        )));
    }
    // The system's loader is the one stallscope itself runs on; another (a glibc under its own
    // prefix) may be older than the interposer's symbol versions allow.
    if !SYSTEM_LOADERS.contains(&interp.as_ref())
        && let Some(why) = std::fs::read(interp.as_ref())
            .ok()
            .and_then(|d| old_glibc(&d))
    {
        return Ok(Preload::Foreign(why));
    }
    Ok(Preload::Takes)
}

/// Where the system's glibc loader is (the x86-64 ABI's path, and Debian's multiarch one).
pub(super) const SYSTEM_LOADERS: [&str; 2] = [
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
];

/// The oldest glibc the interposer loads into: it needs GLIBC_2.34's symbol versions (dlsym and
/// the pthread functions in libc.so.6); an older loader refuses to start the program at all
/// ("version `GLIBC_2.34' not found (required by libstallscope-....so)").
pub(super) const OLDEST_GLIBC_MINOR: u32 = 34;

/// Why a glibc loader (its file's bytes) is too old for the interposer; None when it is not. A
/// loader of glibc 2.34 or later defines the symbol version GLIBC_2.34 (its name is in the
/// file's dynamic strings); the release, for the note, is in the `--version` text of 2.32 and
/// later ("... stable release version 2.33.").
pub(super) fn old_glibc(loader: &[u8]) -> Option<String> {
    let needed = format!("\0GLIBC_2.{OLDEST_GLIBC_MINOR}\0");
    if loader.windows(needed.len()).any(|w| w == needed.as_bytes()) {
        return None;
    }
    let release = glibc_minor_of_loader(loader)
        .map_or("older than 2.34".to_string(), |minor| format!("2.{minor}"));
    Some(format!(
        "its C library is glibc {release}, and the interposer needs glibc 2.{OLDEST_GLIBC_MINOR} or later"
    ))
}

pub(super) fn glibc_minor_of_loader(loader: &[u8]) -> Option<u32> {
    const MARK: &[u8] = b"release version 2.";
    let at = loader.windows(MARK.len()).position(|w| w == MARK)? + MARK.len();
    let digits: Vec<u8> = loader[at..]
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .copied()
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}
