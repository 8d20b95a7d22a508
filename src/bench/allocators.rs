//! Finding malloc replacements to `LD_PRELOAD`, as shipped by Debian and Ubuntu.

use std::path::{Path, PathBuf};

/// An allocator by name, with the library to preload (`None` means the C library's own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocator {
    pub name: String,
    pub preload: Option<PathBuf>,
}

/// An allocator that was asked for but is not installed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MissingAllocator {
    pub name: String,
    /// Debian package that provides it, when known.
    pub package: Option<String>,
    pub library: String,
}

impl MissingAllocator {
    pub fn message(&self) -> String {
        match &self.package {
            Some(package) => format!(
                "allocator {} not found ({} is missing); install it with: apt-get install {}",
                self.name, self.library, package
            ),
            None => format!("allocator library {} does not exist", self.library),
        }
    }
}

/// Known allocators: name, shared object, Debian package.
const KNOWN: &[(&str, &str, &str)] = &[
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("mimalloc", "libmimalloc.so.2", "libmimalloc2.0"),
    (
        "tcmalloc",
        "libtcmalloc_minimal.so.4",
        "libtcmalloc-minimal4",
    ),
];

/// Names accepted for the C library's allocator (no preload).
const SYSTEM_NAMES: &[&str] = &["glibc", "system", "libc", "ptmalloc"];

/// Directories searched for the libraries, multiarch first.
pub fn library_dirs() -> Vec<PathBuf> {
    let multiarch = format!("/usr/lib/{}-linux-gnu", std::env::consts::ARCH);
    [
        multiarch.as_str(),
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
        "/lib64",
        "/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .collect()
}

/// Resolves each requested name: a known allocator, the system one, or a path to a
/// shared object. Unavailable ones are returned separately so the caller can report
/// them and still measure the rest.
pub fn resolve(names: &[String], dirs: &[PathBuf]) -> (Vec<Allocator>, Vec<MissingAllocator>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let name = name.trim();
        if SYSTEM_NAMES.contains(&name) {
            found.push(Allocator {
                name: name.to_string(),
                preload: None,
            });
        } else if let Some((_, library, package)) = KNOWN.iter().find(|k| k.0 == name) {
            match dirs.iter().map(|d| d.join(library)).find(|p| p.exists()) {
                Some(path) => found.push(Allocator {
                    name: name.to_string(),
                    preload: Some(path),
                }),
                None => missing.push(MissingAllocator {
                    name: name.to_string(),
                    package: Some(package.to_string()),
                    library: library.to_string(),
                }),
            }
        } else if Path::new(name).exists() {
            let label = Path::new(name)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| name.to_string());
            found.push(Allocator {
                name: label,
                preload: Some(PathBuf::from(name)),
            });
        } else {
            missing.push(MissingAllocator {
                name: name.to_string(),
                package: None,
                library: name.to_string(),
            });
        }
    }
    (found, missing)
}

/// The `LD_PRELOAD` value that puts `library` in front of whatever is preloaded already.
pub fn preload_value(library: &Path, existing: Option<&str>) -> String {
    match existing.filter(|e| !e.is_empty()) {
        Some(existing) => format!("{}:{existing}", library.display()),
        None => library.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_known_system_path_and_missing_allocators() {
        let dir =
            std::env::temp_dir().join(format!("stallscope-alloc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libjemalloc.so.2"), b"").unwrap();
        let names: Vec<String> = ["glibc", "jemalloc", "tcmalloc", "/nonexistent/libx.so"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (found, missing) = resolve(&names, std::slice::from_ref(&dir));
        std::fs::remove_dir_all(&dir).unwrap();

        assert_eq!(found.len(), 2);
        assert_eq!(found[0].preload, None);
        assert_eq!(found[1].preload, Some(dir.join("libjemalloc.so.2")));
        assert_eq!(missing.len(), 2);
        assert_eq!(missing[0].package.as_deref(), Some("libtcmalloc-minimal4"));
        assert!(
            missing[0]
                .message()
                .contains("apt-get install libtcmalloc-minimal4")
        );
        assert_eq!(missing[1].package, None);
    }

    #[test]
    fn preload_goes_in_front_of_existing_preloads() {
        let lib = Path::new("/usr/lib/libjemalloc.so.2");
        assert_eq!(preload_value(lib, None), "/usr/lib/libjemalloc.so.2");
        assert_eq!(preload_value(lib, Some("")), "/usr/lib/libjemalloc.so.2");
        assert_eq!(
            preload_value(lib, Some("/x.so")),
            "/usr/lib/libjemalloc.so.2:/x.so"
        );
    }
}
