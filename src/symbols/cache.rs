//! What is read from the profiled modules' files, read once per stallscope process and shared by
//! every profile that names the same module: a run of many processes (a `cargo build`, each rustc
//! a profile) names librustc_driver in every rustc's profile, and its symbol tables, its machine
//! code and its build id are read once for the run, not once per profile.
//!
//! A file is known by its path and what changes when it is replaced or rewritten (device, inode,
//! size, modification time): a module rebuilt while stallscope runs is read again. Files are
//! mapped, not read into memory, so only the pages looked at are resident (librustc_driver's and
//! libLLVM's code is 150 MB). The DWARF and symbol loaders (`addr2line::Loader`, which is not
//! thread-safe) are cached per thread; the rest is shared by every thread.

use crate::profile::Module;
use memmap2::Mmap;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

/// A file as it is on disk now.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    path: PathBuf,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl FileId {
    /// The regular file at `path` (symbolic links followed), or None.
    pub(crate) fn of(path: &Path) -> Option<FileId> {
        let meta = std::fs::metadata(path).ok()?;
        meta.is_file().then(|| FileId {
            path: path.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        })
    }
}

/// A module as a profile names it (path and build id) with the files that name leads to now: two
/// profiles' modules with one key resolve every address alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ModuleKey {
    path: String,
    build_id: Vec<u8>,
    file: Option<FileId>,
    debug: Option<FileId>,
}

impl ModuleKey {
    fn of(module: &Module, debug_root: &Path) -> ModuleKey {
        ModuleKey {
            path: module.path.clone(),
            build_id: module.build_id.clone(),
            file: FileId::of(Path::new(&module.path)),
            debug: debug_path(module, debug_root).and_then(|p| FileId::of(&p)),
        }
    }
}

/// The separate debug file of a module by its build id (`<root>/.build-id/ab/cdef....debug`, else
/// fetched through debuginfod when DEBUGINFOD_URLS is set).
pub(crate) fn debug_path(module: &Module, debug_root: &Path) -> Option<PathBuf> {
    super::debuginfod::debug_file(&module.build_id, debug_root)
}

/// A read-only mapping of a file (None: it cannot be opened or is empty).
pub(crate) fn map(path: &Path) -> Option<Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the mapping is read-only and private to this process. A module's file truncated
    // while it is mapped would fault on access, as it would for addr2line's own mappings of the
    // same files; the file identity (size, mtime) makes a rewritten file a new mapping.
    unsafe { Mmap::map(&file) }.ok()
}

/// One process-wide table, filled on first use.
type Table<K, V> = OnceLock<Mutex<HashMap<K, V>>>;

/// The value of `key` in `table`, made by `make` the first time. `make` runs outside the lock:
/// two threads asking at once may both make it, and the first stored wins.
fn cached<K: Hash + Eq, V: Clone>(table: &Table<K, V>, key: K, make: impl FnOnce() -> V) -> V {
    let table = table.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = table.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return v.clone();
    }
    let v = make();
    table
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_insert(v)
        .clone()
}

/// The build id of the ELF file at `path`, None when it has none or cannot be read.
pub(crate) fn build_id(path: &Path) -> Option<Arc<[u8]>> {
    static IDS: Table<FileId, Option<Arc<[u8]>>> = OnceLock::new();
    let id = FileId::of(path)?;
    cached(&IDS, id, || {
        use object::Object;
        let map = map(path)?;
        let file = object::File::parse(&*map).ok()?;
        file.build_id().ok()?.map(Arc::from)
    })
}

/// The executable segments of a module's file: (link-time address, range in the mapping).
#[derive(Default)]
pub(crate) struct CodeFile {
    map: Option<Mmap>,
    segments: Vec<(u64, std::ops::Range<usize>)>,
}

impl CodeFile {
    /// The segment holding the link-time `address`: its address and bytes.
    pub(crate) fn segment_at(&self, address: u64) -> Option<(u64, &[u8])> {
        let map = self.map.as_ref()?;
        self.segments.iter().find_map(|(start, range)| {
            (*start <= address && address - start < range.len() as u64)
                .then(|| (*start, &map[range.clone()]))
        })
    }
}

/// The executable segments of the file at `path`, mapped once per process.
pub(crate) fn code_file(path: &str) -> Arc<CodeFile> {
    static FILES: Table<FileId, Arc<CodeFile>> = OnceLock::new();
    let path = Path::new(path);
    let Some(id) = FileId::of(path) else {
        return Arc::default();
    };
    cached(&FILES, id, || Arc::new(read_code_file(path)))
}

fn read_code_file(path: &Path) -> CodeFile {
    use object::{Object, ObjectSegment, SegmentFlags};
    const PF_X: u32 = 1;
    let Some(map) = map(path) else {
        return CodeFile::default();
    };
    let segments = match object::File::parse(&*map) {
        Ok(file) => file
            .segments()
            .filter(
                |s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & PF_X != 0),
            )
            .filter_map(|s| {
                let (offset, size) = s.file_range();
                let start = usize::try_from(offset).ok()?;
                let end = start.checked_add(usize::try_from(size).ok()?)?;
                (end <= map.len()).then_some((s.address(), start..end))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    CodeFile {
        map: Some(map),
        segments,
    }
}

/// A module's data objects: (address, size, name), by address.
pub(crate) type DataTable = Vec<(u64, u64, super::DataName)>;

/// A module's data symbols (see `DataSymbols`), read once per process.
pub(crate) fn data_symbols(
    module: &Module,
    debug_root: &Path,
    read: impl FnOnce() -> DataTable,
) -> Arc<DataTable> {
    static TABLES: Table<ModuleKey, Arc<DataTable>> = OnceLock::new();
    cached(&TABLES, ModuleKey::of(module, debug_root), || {
        Arc::new(read())
    })
}

/// What is known of a module for its code addresses.
pub(crate) struct ModuleDebug {
    /// DWARF and symbols: the separate debug file when there is one, else the module itself.
    pub(crate) primary: Option<addr2line::Loader>,
    /// The module itself, for its symbol tables, when `primary` is a debug file.
    pub(crate) fallback: Option<addr2line::Loader>,
    /// The frames of each address (in the file) resolved so far, by any profile.
    pub(crate) frames: RefCell<HashMap<u64, Vec<super::Frame>>>,
}

/// A module's loaders, opened once per thread (`addr2line::Loader` is not thread-safe).
pub(crate) fn module_debug(module: &Module, debug_root: &Path) -> Rc<ModuleDebug> {
    thread_local! {
        static LOADERS: RefCell<HashMap<ModuleKey, Rc<ModuleDebug>>> = RefCell::new(HashMap::new());
    }
    let key = ModuleKey::of(module, debug_root);
    if let Some(d) = LOADERS.with_borrow(|l| l.get(&key).cloned()) {
        return d;
    }
    let d = Rc::new(open_module(module, &key));
    LOADERS.with_borrow_mut(|l| l.insert(key, d.clone()));
    d
}

/// Opens what is known of a module: its file (when its build id still matches the profile's)
/// and its separate debug file by build id.
fn open_module(module: &Module, key: &ModuleKey) -> ModuleDebug {
    let path = Path::new(&module.path);
    let file_ok = path.is_absolute()
        && key.file.is_some()
        && (module.build_id.is_empty() || build_id(path).is_none_or(|id| *id == *module.build_id));
    let own = if file_ok {
        addr2line::Loader::new(path).ok()
    } else {
        None
    };
    let debug = key
        .debug
        .as_ref()
        .and_then(|d| addr2line::Loader::new(&d.path).ok());
    match debug {
        Some(d) => ModuleDebug {
            primary: Some(d),
            fallback: own,
            frames: RefCell::default(),
        },
        None => ModuleDebug {
            primary: own,
            fallback: None,
            frames: RefCell::default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str) -> Module {
        Module {
            bias: 0,
            lo: 0,
            hi: 0,
            seen_mono_ns: 0,
            build_id: Vec::new(),
            path: path.into(),
            gone_mono_ns: None,
        }
    }

    #[test]
    fn a_module_named_alike_by_two_profiles_is_opened_once() {
        let exe = std::env::current_exe().unwrap();
        let m = module(exe.to_str().unwrap());
        let root = Path::new("/nonexistent-debug-root");
        let a = module_debug(&m, root);
        let b = module_debug(&m.clone(), root);
        assert!(Rc::ptr_eq(&a, &b), "one loader for both profiles");
        assert!(a.primary.is_some(), "the test binary itself opens");
        let c = code_file(exe.to_str().unwrap());
        let d = code_file(exe.to_str().unwrap());
        assert!(Arc::ptr_eq(&c, &d), "one mapping of its code");
        assert!(!c.segments.is_empty(), "the test binary has code");
        assert_eq!(build_id(&exe), build_id(&exe));
    }

    #[test]
    fn a_rewritten_file_is_read_again() {
        let dir = std::env::temp_dir().join(format!("stallscope-symcache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("module.so");
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        std::fs::write(&path, &exe).unwrap();
        let first = code_file(path.to_str().unwrap());
        assert!(!first.segments.is_empty());
        // Replaced by another file (another inode, size): the cache must not answer from the old.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"not an ELF file").unwrap();
        let second = code_file(path.to_str().unwrap());
        assert!(second.segments.is_empty(), "the new contents are read");
        assert!(build_id(&path).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_files_give_nothing() {
        let m = module("/nonexistent/libmissing.so");
        let d = module_debug(&m, Path::new("/nonexistent"));
        assert!(d.primary.is_none() && d.fallback.is_none());
        assert!(
            code_file("/nonexistent/libmissing.so")
                .segment_at(0)
                .is_none()
        );
    }
}
