//! Symbolization of the return addresses in a profile's stacks, after the process has ended:
//! each address is mapped to the module (loaded object) that held it by the profile's MODULE
//! records, then resolved in that module's file — its DWARF (with inlined frames) and symbol
//! tables, or a separate debug file found by build id under /usr/lib/debug/.build-id/ or through
//! debuginfod when `DEBUGINFOD_URLS` is set (`debuginfod`). Frames that cannot be resolved are
//! kept as `module+offset`. One loader per module, shared by every profile that names the module
//! (`cache`).

mod cache;
pub mod code;
pub mod debuginfod;
pub mod libc_locks;
pub mod python;

use crate::profile::{Module, Profile, Stack};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// One frame of a resolved stack; an address with inlined calls yields several, innermost first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// The module's path (or `?` when no module holds the address).
    pub module: String,
    /// The address relative to the module's file (its ELF virtual address).
    pub offset: u64,
    /// This frame was inlined into the next one (same address).
    pub inlined: bool,
}

impl Frame {
    /// A Python function's frame (its file is the Python file).
    pub fn is_python(&self) -> bool {
        self.module == python::PYTHON_MODULE
    }

    /// The file name of the module (`sort` for `/usr/bin/sort`).
    pub fn module_name(&self) -> &str {
        file_name(&self.module)
    }

    /// The frame's name, the one every view uses: its function, else `module+0xoffset` (the
    /// module's file name and the address in its file), never `??`.
    pub fn name(&self) -> String {
        match &self.function {
            Some(f) => closure_words(f),
            None => self.module_offset(),
        }
    }

    /// `module+0xoffset`.
    pub fn module_offset(&self) -> String {
        format!("{}+{:#x}", self.module_name(), self.offset)
    }

    /// The function without its templates, parameters and return type (`std::operator>>`), else
    /// `module+0xoffset`.
    pub fn short_name(&self) -> String {
        match &self.function {
            Some(f) if self.is_python() => f.clone(),
            Some(f) => closure_words(&short_function(f)),
            None => self.module_offset(),
        }
    }

    /// `function (file:line)`, or `module+0xoffset` when nothing better is known.
    pub fn display(&self) -> String {
        let name = self.name();
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{name} ({}:{line})", short_path(file)),
            (Some(file), None) => format!("{name} ({})", short_path(file)),
            _ if self.function.is_some() => format!("{name} [{}]", self.module_name()),
            _ => name,
        }
    }

    /// The short form findings use: `parse at p.cpp:12`, `parse in p.cpp`, `parse (module)`, or
    /// `module+0xoffset` without a function.
    pub fn short_text(&self) -> String {
        let function = self.short_name();
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{function} at {}:{line}", file_name(file)),
            (Some(file), None) => format!("{function} in {}", file_name(file)),
            _ if self.function.is_some() && !self.module.is_empty() => {
                format!("{function} ({})", self.module_name())
            }
            _ => function,
        }
    }
}

/// A Rust closure named by the function that encloses it: `app::main::{{closure}}` reads
/// `app::main (closure)` (nested closures: one word).
pub fn closure_words(name: &str) -> String {
    if !name.contains("{{closure}}") {
        return name.to_string();
    }
    let base = name.replace("::{{closure}}", "");
    format!("{base} (closure)")
}

/// The last component of a path: `sort` for `/usr/bin/sort`.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A C++ function name without its template arguments, parameters and return type:
/// `std::istream& std::operator>><char>(std::istream&, std::string&)` -> `std::operator>>`.
pub fn short_function(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        // Operator names hold brackets that are not template or parameter brackets.
        if depth == 0 && out.ends_with("operator") {
            let op: String = rest
                .chars()
                .take_while(|c| "<>=!+-*/%&|^~[]()".contains(*c))
                .collect();
            // Drop what opens the parameters or the template arguments: `<<(`, `>><`, `<<<`.
            let op = if op.starts_with("()") {
                "()".to_string()
            } else {
                let op = op.strip_suffix('(').unwrap_or(&op);
                match op.strip_suffix('<') {
                    Some(shorter) if op.len() > 2 => shorter.to_string(),
                    _ => op.to_string(),
                }
            };
            if !op.is_empty() {
                out.push_str(&op);
                rest = &rest[op.len()..];
                continue;
            }
        }
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    match words.as_slice() {
        [] => name.to_string(),
        [.., before, last] if before.ends_with("operator") => format!("{before} {last}"),
        [.., last] => last.trim_start_matches(['&', '*']).to_string(),
    }
}

fn short_path(file: &str) -> String {
    let parts: Vec<&str> = file.rsplit('/').take(2).collect();
    if parts.len() == 2 && file.starts_with('/') {
        format!("{}/{}", parts[1], parts[0])
    } else {
        file.to_string()
    }
}

/// Resolves addresses of one profile; caches a loader per module and each address's frames.
pub struct Symbolizer<'a> {
    modules: &'a [Module],
    /// The CPython interpreter of the profile: its code objects name the Python frames.
    python: Option<&'a crate::profile::python::Python>,
    /// Per module of the profile, its loaders (None: an offline symbolizer).
    loaders: HashMap<usize, Option<Rc<cache::ModuleDebug>>>,
    cache: HashMap<(u64, Option<usize>), Vec<Frame>>,
    started: Instant,
    progress_shown: bool,
    debug_root: PathBuf,
    /// Open modules' files and debug files (false: every frame is `module+offset`).
    read_files: bool,
    /// The program's file by the name it was run as, where that is a link to it: (the file's
    /// path, the link's). Frames of the program are named as the user knows it.
    run_as: Option<(String, String)>,
}

/// The path `command` (a command's first word) names through a symbolic link to `exe`, as the
/// shell would find it (in `PATH` unless it has a `/`), if it is one. redis-server in Debian is a
/// link to redis-check-rdb, the file the kernel and /proc name: frames of the server read
/// `(redis-server)`, as its threads' names do. None where the link is not here (a profile read on
/// another machine), or leads elsewhere.
fn run_as_link(command: &str, exe: &str) -> Option<String> {
    if command.is_empty() || exe.is_empty() || file_name(command) == file_name(exe) {
        return None;
    }
    let candidates: Vec<PathBuf> = if command.contains('/') {
        vec![PathBuf::from(command)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(command)).collect())
            .unwrap_or_default()
    };
    let target = std::fs::canonicalize(exe).ok()?;
    let found = candidates.into_iter().find(|c| c.is_file())?;
    let is_link = std::fs::symlink_metadata(&found)
        .ok()?
        .file_type()
        .is_symlink();
    (is_link && found.is_absolute() && std::fs::canonicalize(&found).ok()? == target)
        .then(|| found.to_string_lossy().into_owned())
}

impl<'a> Symbolizer<'a> {
    pub fn new(profile: &'a Profile) -> Self {
        let exe = &profile.process.exe;
        let run_as = profile
            .process
            .command
            .first()
            .and_then(|c| run_as_link(c, exe))
            .map(|link| (exe.clone(), link));
        Symbolizer {
            run_as,
            read_files: true,
            ..Symbolizer::offline(profile)
        }
    }

    /// A symbolizer that opens no file: every frame is `module+offset`. For figures that need no
    /// names (bench's shares) and for untrusted profiles (the fuzz targets), whose module paths
    /// may name any file.
    pub fn offline(profile: &'a Profile) -> Self {
        Symbolizer {
            run_as: None,
            modules: &profile.modules,
            python: profile.python.as_ref(),
            loaders: HashMap::new(),
            cache: HashMap::new(),
            started: Instant::now(),
            progress_shown: false,
            debug_root: std::env::var_os("STALLSCOPE_DEBUG_ROOT")
                .map_or_else(|| PathBuf::from("/usr/lib/debug"), PathBuf::from),
            read_files: false,
        }
    }

    /// The module holding `pc` at time `t`: of the modules whose range contains it, the first
    /// recorded that was not yet unloaded at `t` (objects loaded one after another at the same
    /// addresses are recorded in that order); failing that, the last recorded.
    fn module_for(&self, pc: u64, t: u64) -> Option<usize> {
        let holds = |m: &Module| m.lo <= pc && pc < m.hi;
        self.modules
            .iter()
            .position(|m| holds(m) && m.gone_mono_ns.is_none_or(|g| g > t))
            .or_else(|| self.modules.iter().rposition(holds))
    }

    /// Resolves a whole stack, innermost first, its Python frames in place of the
    /// interpreter's evaluation loops that ran them.
    pub fn stack(&mut self, stack: &Stack) -> Vec<Frame> {
        self.stack_below(Vec::new(), stack)
    }

    /// The frames `inner` (a CPU sample's instruction), then those of its callers' `stack`,
    /// with the stack's Python frames in place of the evaluation loops that ran them.
    pub fn stack_below(&mut self, mut inner: Vec<Frame>, stack: &Stack) -> Vec<Frame> {
        for &pc in &stack.pcs {
            // A return address points after the call: look up the call instruction itself.
            inner.extend(self.address(pc.saturating_sub(1), stack.first_mono_ns));
        }
        self.with_python(inner, stack)
    }

    /// `frames` (a stack's, resolved) with the stack's Python frames in place of the evaluation
    /// loops that ran them.
    pub fn with_python(&self, frames: Vec<Frame>, stack: &Stack) -> Vec<Frame> {
        let inner = frames;
        match self.python {
            Some(py) if !stack.python.is_empty() => python::splice(inner, &stack.python, py),
            _ => inner,
        }
    }

    /// Shows a progress line on stderr once symbolization has taken more than a second.
    pub fn progress(&mut self, done: usize, total: usize) {
        if self.started.elapsed().as_secs_f64() < 1.0 || !std::io::stderr().is_terminal() {
            return;
        }
        self.progress_shown = true;
        let width = 30;
        let filled = (done * width).checked_div(total).unwrap_or(width);
        eprint!(
            "\rsymbolizing [{}{}] {done}/{total} stacks",
            "#".repeat(filled),
            " ".repeat(width - filled)
        );
        let _ = std::io::stderr().flush();
    }

    pub fn finish(&mut self) {
        if self.progress_shown {
            eprint!("\r{:60}\r", "");
            self.progress_shown = false;
        }
    }

    /// Resolves one code address, as it was at time `t`.
    pub fn address(&mut self, pc: u64, t: u64) -> Vec<Frame> {
        let module = self.module_for(pc, t);
        if let Some(f) = self.cache.get(&(pc, module)) {
            return f.clone();
        }
        let frames = self.resolve(pc, module);
        self.cache.insert((pc, module), frames.clone());
        frames
    }

    fn resolve(&mut self, pc: u64, module: Option<usize>) -> Vec<Frame> {
        let Some(mi) = module else {
            return vec![Frame {
                function: None,
                file: None,
                line: None,
                module: "?".into(),
                offset: pc,
                inlined: false,
            }];
        };
        let module = &self.modules[mi];
        let offset = pc - module.bias;
        let path = match &self.run_as {
            Some((exe, link)) if *exe == module.path => link.clone(),
            _ => module.path.clone(),
        };
        let debug_root = self.debug_root.clone();
        let read_files = self.read_files;
        let dbg = self
            .loaders
            .entry(mi)
            .or_insert_with(|| read_files.then(|| cache::module_debug(module, &debug_root)))
            .clone();
        let base = Frame {
            function: None,
            file: None,
            line: None,
            module: path,
            offset,
            inlined: false,
        };
        let Some(dbg) = dbg else {
            return resolve_in(base, None, None);
        };
        // Another profile of the run may have resolved this address of the module already.
        if let Some(frames) = dbg.frames.borrow().get(&offset) {
            return frames.clone();
        }
        let frames = resolve_in(base, dbg.primary.as_ref(), dbg.fallback.as_ref());
        dbg.frames.borrow_mut().insert(offset, frames.clone());
        frames
    }
}

/// The frames of the address `base.offset` in a module, from its loaders (None: unknown).
fn resolve_in(
    base: Frame,
    primary: Option<&addr2line::Loader>,
    fallback: Option<&addr2line::Loader>,
) -> Vec<Frame> {
    let offset = base.offset;
    let mut frames = Vec::new();
    if let Some(loader) = primary
        && let Ok(mut iter) = loader.find_frames(offset)
    {
        while let Ok(Some(f)) = iter.next() {
            let function = f
                .function
                .as_ref()
                .and_then(|n| n.demangle().ok().map(|s| s.into_owned()));
            let (file, line) = f
                .location
                .map_or((None, None), |l| (l.file.map(str::to_string), l.line));
            frames.push(Frame {
                function,
                file,
                line,
                inlined: true,
                ..base.clone()
            });
        }
    }
    if let Some(last) = frames.last_mut() {
        last.inlined = false;
    }
    // The interposer's hooks tail-call their slow part (`ss_slow_<symbol>`), so the hook's
    // own frame is gone from a stack taken inside it: the slow part stands for the function
    // the program called.
    if is_own_module(&base.module) {
        for f in &mut frames {
            if let Some(name) = f
                .function
                .as_deref()
                .and_then(|n| n.strip_prefix(SLOW_PART_PREFIX))
            {
                f.function = Some(name.to_string());
            }
        }
    }
    // No DWARF function name: the symbol tables (the debug file's, then the module's).
    if frames.iter().all(|f| f.function.is_none()) {
        let symbol = [primary, fallback]
            .into_iter()
            .flatten()
            .find_map(|l| l.find_symbol(offset).map(demangle));
        let (file, line) = frames
            .last()
            .map_or((None, None), |f| (f.file.clone(), f.line));
        let symbol = symbol.map(|n| match n.strip_prefix(SLOW_PART_PREFIX) {
            Some(name) if is_own_module(&base.module) => name.to_string(),
            _ => n,
        });
        frames = vec![Frame {
            function: symbol,
            file,
            line,
            ..base
        }];
    }
    frames
}

/// Names data addresses (a lock in a global or static variable) by the symbol tables of the
/// module that holds them: `log_mutex`, or `g_state+64` inside a larger object. One parsed
/// table per module, shared by every profile that names the module (`cache`).
pub struct DataSymbols<'a> {
    modules: &'a [Module],
    tables: HashMap<usize, Arc<cache::DataTable>>,
    debug_root: PathBuf,
}

impl<'a> DataSymbols<'a> {
    pub fn new(modules: &'a [Module]) -> Self {
        DataSymbols {
            modules,
            tables: HashMap::new(),
            debug_root: std::env::var_os("STALLSCOPE_DEBUG_ROOT")
                .map_or_else(|| PathBuf::from("/usr/lib/debug"), PathBuf::from),
        }
    }

    /// The module's file name and the symbol holding `address` (with `+offset` when it is not
    /// at the symbol's start), or None when no module's data symbol holds it.
    pub fn name(&mut self, address: u64) -> Option<(String, String)> {
        let mi = self
            .modules
            .iter()
            .rposition(|m| m.lo <= address && address < m.hi)?;
        let module = &self.modules[mi];
        let offset = address - module.bias;
        let debug_root = self.debug_root.clone();
        let table = self.tables.entry(mi).or_insert_with(|| {
            cache::data_symbols(module, &debug_root, || {
                data_symbol_table(module, &debug_root)
            })
        });
        let i = table.partition_point(|e| e.0 <= offset).checked_sub(1)?;
        let (start, size, name) = &table[i];
        if offset >= start + size.max(&1) {
            return None;
        }
        let name = name.text();
        let name = if offset == *start {
            name
        } else {
            format!("{name}+{}", offset - start)
        };
        Some((file_name(&module.path).to_string(), name))
    }
}

/// A data symbol's name: as the symbol table has it (demangled when asked for: most of a large
/// library's thousands are never asked for), or already demangled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DataName {
    Raw(String),
    Demangled(String),
}

impl DataName {
    /// The name demangled, without templates and parameters (`short_function`).
    fn text(&self) -> String {
        match self {
            DataName::Raw(raw) => short_function(&demangle(raw)),
            DataName::Demangled(name) => name.clone(),
        }
    }
}

/// The data objects of a module's symbol tables (its own, then its debug file's by build id):
/// (address, size, name), by address. Of several objects at one address, the smallest, and of
/// those the first by demangled name.
fn data_symbol_table(module: &Module, debug_root: &Path) -> cache::DataTable {
    use object::{Object, ObjectSymbol, SymbolKind};
    let paths = [
        Some(PathBuf::from(&module.path)),
        cache::debug_path(module, debug_root),
    ];
    let mut out = Vec::new();
    for path in paths.into_iter().flatten() {
        let Some(data) = cache::map(&path) else {
            continue;
        };
        let Ok(file) = object::File::parse(&*data) else {
            continue;
        };
        if !module.build_id.is_empty()
            && file
                .build_id()
                .ok()
                .flatten()
                .is_some_and(|id| id != module.build_id.as_slice())
        {
            continue;
        }
        for sym in file.symbols() {
            if sym.kind() == SymbolKind::Data
                && sym.size() > 0
                && let Ok(name) = sym.name()
            {
                out.push((sym.address(), sym.size(), name.to_string()));
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out.sort_unstable_by_key(|e| (e.0, e.1));
    out.chunk_by(|a, b| a.0 == b.0)
        .map(|group| {
            let (address, size) = (group[0].0, group[0].1);
            let smallest = group.iter().take_while(|e| e.1 == size);
            let name = if group.len() > 1 && group[1].1 == size {
                smallest
                    .map(|e| short_function(&demangle(&e.2)))
                    .min()
                    .map_or(DataName::Raw(String::new()), DataName::Demangled)
            } else {
                DataName::Raw(group[0].2.clone())
            };
            (address, size, name)
        })
        .collect()
}

/// Demangles a C++ or Rust symbol name; other names are returned as they are. Only a mangled
/// name (`_Z`, `_R`) is demangled: a C name such as `m` or `i` also parses as a mangled builtin
/// type (`m` read "unsigned long", and a mutex named `m` was called "long").
pub fn demangle(name: &str) -> String {
    if !(name.starts_with("_Z") || name.starts_with("_R")) {
        return name.to_string();
    }
    addr2line::demangle_auto(Cow::Borrowed(name), None).into_owned()
}

/// The prefix of an interposer hook's slow part, named after the symbol it interposes
/// (preload/ss_internal.h).
const SLOW_PART_PREFIX: &str = "ss_slow_";

/// The interposer's own library (as `run` writes it out: libstallscope-<hash>.so).
pub fn is_own_module(path: &str) -> bool {
    Path::new(path)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("libstallscope"))
}

/// Modules and functions that are the allocator's, the interposer's or the language runtime's:
/// a site is shown by its first frame that matches none of these (the user's frame).
const RUNTIME_MODULES: &[&str] = &[
    "libstallscope",
    "libc.so",
    "libstdc++.so",
    "libgcc_s.so",
    "ld-linux",
    "libm.so",
    "libjemalloc",
    "libtcmalloc",
    "libmimalloc",
    "libgomp",
    "libomp",
    "libiomp5",
    "libtbb",
    // Runtimes' shared libraries as distributions ship them (Debian's libabsl_*.so.20220623):
    // the same libraries analysis/runtime_waits.json names the runtime of.
    "libabsl_",
    "libfolly",
];
const RUNTIME_FUNCTIONS: &[&str] = &[
    "std::",
    "__gthread_",
    "__GI_",
    "execute_native_thread_routine",
    "__gnu_cxx::",
    "operator new",
    "operator delete",
    "__cxxabiv1::",
    "__cxa_",
    "__libc_",
    "_IO_",
    "__gnu_",
    "alloc::",
    "__rust_",
    "__rdl_",
    "<alloc::",
    "<std::",
    "core::",
    "<core::",
    // Rust crates that run the user's code or lock for it: the frame that called them is the
    // user's (rayon's workers and bridges, parking_lot's and lock_api's locks, crossbeam,
    // tokio, std's HashMap).
    "rayon::",
    "rayon_core::",
    "<rayon",
    "parking_lot",
    "<parking_lot",
    "lock_api::",
    "<lock_api::",
    "crossbeam",
    "<crossbeam",
    "tokio::",
    "<tokio::",
    "hashbrown::",
    "<hashbrown::",
    // libstdc++'s parallel algorithms (std::execution): their backends and patterns.
    "__pstl::",
];

/// A method of a Rust primitive type (`<u64>::wrapping_add`, `<[T]>::sort`, `<str>::find`):
/// the core library's, inlined into the user's code.
fn is_rust_primitive_method(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('<') else {
        return false;
    };
    let ty = rest.split(">::").next().unwrap_or("");
    ty.starts_with('[')
        || ty.starts_with('*')
        || ty.starts_with('&')
        || matches!(
            ty,
            "u8" | "u16"
                | "u32"
                | "u64"
                | "u128"
                | "usize"
                | "i8"
                | "i16"
                | "i32"
                | "i64"
                | "i128"
                | "isize"
                | "f32"
                | "f64"
                | "bool"
                | "char"
                | "str"
        )
}

/// Allocation wrappers common in C programs (libiberty, GLib, git, ...), matched by exact name:
/// their caller is the interesting frame.
const ALLOC_WRAPPERS: &[&str] = &[
    "xmalloc",
    "xcalloc",
    "xrealloc",
    "xstrdup",
    "xstrndup",
    "xmemdup",
    "xzalloc",
    "g_malloc",
    "g_malloc0",
    "g_realloc",
    "g_try_malloc",
    "g_strdup",
    "g_slice_alloc",
    "g_slice_alloc0",
    "emalloc",
    "ecalloc",
    "erealloc",
    "xmallocz",
];

/// Directories of the system's and the compiler's headers: a frame inlined from one of them
/// (`std::lock_guard`'s constructor, `__gthread_mutex_lock` in gthr-default.h) is the standard
/// library's wrapper, not the user's line.
const SYSTEM_HEADER_DIRS: &[&str] = &["/usr/include/", "/usr/lib/gcc/", "/usr/local/include/c++/"];

/// A frame inlined from a system or compiler header (a standard library wrapper).
pub fn is_system_header_frame(f: &Frame) -> bool {
    f.file
        .as_deref()
        .is_some_and(|file| SYSTEM_HEADER_DIRS.iter().any(|d| file.starts_with(d)))
}

/// The frame of the function the user called (in `frames`, whose user frame is `user`): the
/// one just inside the user frame, passing over standard-library wrappers inlined from headers
/// (`std::lock_guard` -> `pthread_mutex_lock`). None when the user frame is innermost.
pub fn called_frame(frames: &[Frame], user: usize) -> Option<usize> {
    if user == 0 || user >= frames.len() {
        return None;
    }
    (0..user)
        .rev()
        .find(|&i| !is_system_header_frame(&frames[i]))
        .or(Some(user - 1))
}

pub fn is_runtime_frame(f: &Frame) -> bool {
    let module = Path::new(&f.module)
        .file_name()
        .map_or(Cow::Borrowed(""), |n| n.to_string_lossy());
    is_system_header_frame(f)
        || RUNTIME_MODULES.iter().any(|m| module.contains(m))
        || f.function.as_deref().is_some_and(|name| {
            let name = qualified_name(name);
            let bare = name.split('(').next().unwrap_or(name);
            RUNTIME_FUNCTIONS.iter().any(|p| name.starts_with(p))
                || ALLOC_WRAPPERS.contains(&bare)
                || is_rust_primitive_method(name)
        })
}

/// The qualified name of a demangled C++ function without the return type that demangling puts
/// before template functions: `void std::vector<int>::push_back(int&&)` gives
/// `std::vector<int>::push_back(int&&)`.
pub fn qualified_name(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b'(' if name[i..].starts_with("(anonymous namespace)") => {
                i += "(anonymous namespace)".len();
                continue;
            }
            b'(' if depth == 0 => break,
            b' ' if depth == 0 && !name[..i].ends_with("operator") => start = i + 1,
            _ => {}
        }
        i += 1;
    }
    &name[start..]
}

/// The index of the user's frame: in a stack with Python frames, the innermost Python frame of
/// the user's own files (`symbols::python::user_frame`); else the first one (from the innermost)
/// outside the runtime that has a name (a stripped program's unnamed internals, `mariadbd+0xde2b6c`, pass to the first named
/// caller: `handler::ha_index_read_map`), else the first outside the runtime, or the outermost
/// frame when every frame is the runtime's.
pub fn user_frame(frames: &[Frame]) -> usize {
    if let Some(i) = python::user_frame(frames) {
        return i;
    }
    let outside = |f: &&Frame| !is_runtime_frame(f);
    // A stack all of runtimes (a stripped allocator's own thread): the runtime's code that called
    // the C library, not the C library's thread start (jemalloc's background thread had read as
    // "clone3 (clone3.S:81)").
    let beyond_libc = |f: &&Frame| {
        let module = crate::symbols::file_name(&f.module);
        !(module.starts_with("libc.so") || module.starts_with("ld-linux") || module.is_empty())
    };
    frames
        .iter()
        .position(|f| outside(&f) && f.function.is_some())
        .or_else(|| frames.iter().position(|f| outside(&f)))
        .or_else(|| frames.iter().position(|f| beyond_libc(&f)))
        .unwrap_or(frames.len().saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: Option<&str>, module: &str) -> Frame {
        Frame {
            function: function.map(str::to_string),
            file: None,
            line: None,
            module: module.into(),
            offset: 0x10,
            inlined: false,
        }
    }

    /// A program run through a link to it (Debian's redis-server -> redis-check-rdb) is named by
    /// the link; a copy, a link to another file or the file's own name are not aliases.
    #[test]
    fn a_program_run_through_a_link_is_named_by_the_link() {
        let dir = std::env::temp_dir().join(format!("stallscope-run-as-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let real = dir.join("redis-check-rdb");
        let other = dir.join("other");
        std::fs::write(&real, b"x").unwrap();
        std::fs::write(&other, b"y").unwrap();
        std::fs::copy(&real, dir.join("copy")).unwrap();
        std::os::unix::fs::symlink("redis-check-rdb", dir.join("redis-server")).unwrap();
        std::os::unix::fs::symlink(&other, dir.join("elsewhere")).unwrap();
        let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
        let exe = path("redis-check-rdb");
        assert_eq!(
            run_as_link(&path("redis-server"), &exe),
            Some(path("redis-server"))
        );
        assert_eq!(run_as_link(&path("copy"), &exe), None);
        assert_eq!(run_as_link(&path("elsewhere"), &exe), None);
        assert_eq!(run_as_link(&exe, &exe), None);
        assert_eq!(run_as_link(&path("missing"), &exe), None);
        assert_eq!(run_as_link("", &exe), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn user_frame_skips_runtime_modules_and_functions() {
        let frames = vec![
            frame(Some("malloc"), "/root/.cache/stallscope/libstallscope-1.so"),
            frame(Some("operator new(unsigned long)"), "/lib/libstdc++.so.6"),
            frame(
                Some("std::__cxx11::basic_string<char>::_M_create"),
                "/tmp/prog",
            ),
            frame(Some("build_name()"), "/tmp/prog"),
            frame(Some("main"), "/tmp/prog"),
        ];
        assert_eq!(user_frame(&frames), 3);
    }

    #[test]
    fn runtime_templates_with_return_types_are_recognized() {
        for name in [
            "void std::__new_allocator<std::string>::construct<std::string, int>(std::string*, int&&)",
            "std::__cxx11::basic_string<char>& std::vector<std::string>::emplace_back<int>(int&&)",
            "operator new(unsigned long)",
        ] {
            assert!(is_runtime_frame(&frame(Some(name), "/tmp/prog")), "{name}");
        }
        assert_eq!(
            qualified_name("int (anonymous namespace)::f(int)"),
            "(anonymous namespace)::f(int)"
        );
        assert_eq!(qualified_name("std::pair<int, int> make(int)"), "make(int)");
        assert!(!is_runtime_frame(&frame(
            Some("void work<std::string>(int)"),
            "/tmp/prog"
        )));
    }

    #[test]
    fn unknown_frames_show_module_and_offset() {
        let f = frame(None, "/usr/lib/libfoo.so.1");
        assert_eq!(f.display(), "libfoo.so.1+0x10");
    }

    #[test]
    fn demangles_cpp_and_rust() {
        assert_eq!(demangle("_Z6helperm"), "helper(unsigned long)");
        assert!(demangle("_ZN4core3fmt5write17h0123456789abcdefE").starts_with("core::fmt::write"));
        assert_eq!(demangle("malloc"), "malloc");
        // C names that also parse as mangled builtin types (unsigned long, int, long).
        for c in ["m", "i", "l", "lock"] {
            assert_eq!(short_function(&demangle(c)), c);
        }
    }
}
