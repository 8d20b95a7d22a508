//! Names the locks that thread-state samples caught threads waiting on: a sample of a thread in
//! the futex system call carries the futex word's address (wall samples: its first argument from
//! /proc; CPU samples: RDI at a `syscall` instruction or in glibc's `__lll_lock_wait*`), and a CPU
//! sample at an inlined lock's atomic instruction names the word when the instruction addresses
//! it RIP-relative (states.rs), so a lock inside the C library, which no hook sees, is named like
//! a program's own: by the data symbol that holds it (libc's debug file
//! names `main_arena`, `_IO_stdfile_1_lock`, random.c's `lock`, `tzset_lock`), with words a user
//! knows (glibc_locks.json: "malloc's arena lock (main_arena)", "the lock of stdout",
//! "random()'s lock"); without the debug file by libc's own structure (`symbols::libc_locks`:
//! the exported function whose code takes it, `_IO_2_1_stdout_->_lock`, main_arena's pointer
//! back at itself); on the heap by what holds it (a malloc arena, a FILE) or the place that
//! initialised it; by its address as a last resort.

use super::states::{Category, StateReport, StateSite};
use crate::profile::Profile;
use crate::profile::format::LockRole;
use crate::symbols::libc_locks::LibcLocks;
use crate::symbols::{DataSymbols, Frame, Symbolizer, file_name, user_frame};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::OnceLock;

#[derive(Debug, Deserialize)]
struct SymbolWords {
    symbol: String,
    words: String,
}

#[derive(Debug, Deserialize)]
struct FunctionLock {
    functions: Vec<String>,
    words: String,
}

#[derive(Debug, Deserialize)]
struct Table {
    symbols: Vec<SymbolWords>,
    function_locks: Vec<FunctionLock>,
    arena_symbols: Vec<String>,
    stdio_functions: Vec<String>,
}

static TABLE_TEXT: &str = include_str!("glibc_locks.json");

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| serde_json::from_str(TABLE_TEXT).expect("glibc_locks.json is valid"))
}

/// Frames that are malloc's own: a lock taken with one of them on the stack is an arena's lock.
pub fn is_allocator_frame(f: &Frame) -> bool {
    let Some(name) = f.function.as_deref() else {
        return false;
    };
    const NAMES: [&str; 12] = [
        "malloc",
        "free",
        "calloc",
        "realloc",
        "_int_malloc",
        "_int_free",
        "arena_get2",
        "tcache_init",
        "__libc_malloc",
        "__libc_free",
        "__libc_calloc",
        "__libc_realloc",
    ];
    let bare = name.split('(').next().unwrap_or(name);
    let bare = bare.strip_prefix("__GI_").unwrap_or(bare);
    let public = bare
        .strip_prefix("__libc_")
        .unwrap_or(bare)
        .trim_start_matches('_');
    // glibc 2.42's slow paths: `__libc_malloc2`, `_int_malloc2`, ...
    let undigited = public.trim_end_matches(|c: char| c.is_ascii_digit());
    NAMES.contains(&bare)
        || NAMES.contains(&public)
        || NAMES.contains(&undigited)
        || public.starts_with("int_free")
        || public.starts_with("int_malloc")
        || public.starts_with("arena_")
}

/// Whether a lock-wait site is inside malloc (an allocator frame at or above the deciding one).
pub fn in_allocator(site: &StateSite) -> bool {
    let from = site.decided_by.unwrap_or(0);
    site.frames.iter().skip(from).any(is_allocator_frame)
}

/// Whether a named lock is a malloc arena's.
pub fn is_arena_lock(how: &str) -> bool {
    how == "allocator"
}

/// Whether a lock-wait site waits for a malloc arena: the lock it caught is named so, or it
/// waits inside malloc on no lock known to be another's. A wait whose every caught word is a
/// runtime's lock or a pthread lock is that lock's, whatever the stack holds: a wall sample's
/// stack is a scan of the thread's stack, which can hold stale return addresses into malloc (a
/// contended Rust std::sync::Mutex read once in a test run as "malloc's arena lock"), and an
/// arena's lock is glibc's own, which neither the pthread hooks nor a runtime's futex wait see.
pub fn is_arena_wait(site: &StateSite) -> bool {
    let another = !site.locks.is_empty()
        && site
            .locks
            .iter()
            .all(|l| matches!(l.how, "runtime" | "pthread"));
    site.lock().is_some_and(|l| is_arena_lock(l.how)) || (in_allocator(site) && !another)
}

/// Names every lock the report's lock-wait sites caught (`StateSite::locks`). Without
/// `read_modules` no symbol table is read: heap words and addresses only.
pub fn name_site_locks(
    report: &mut StateReport,
    profile: &Profile,
    sym: &mut Symbolizer,
    read_modules: bool,
    words: &super::futex::Words,
    pthread_locks: &HashMap<u64, &'static str>,
) {
    let mut data = DataSymbols::new(&profile.modules);
    let mut symbols: HashMap<u64, Option<(String, String)>> = HashMap::new();
    let libc = if read_modules {
        libc_structure(profile)
    } else {
        None
    };
    for t in &mut report.threads {
        for site in t.sites.iter_mut().filter(|s| s.category == Category::Lock) {
            let function = site.function();
            let allocator = in_allocator(site);
            // A function of libc with a private lock of its own, anywhere on the stack.
            let takes = site.frames.iter().find_map(|f| {
                let name = f.function.as_deref()?;
                let bare = super::states::public_libc_name(name.split('(').next().unwrap_or(name));
                table()
                    .function_locks
                    .iter()
                    .find(|l| l.functions.iter().any(|x| x == bare))
                    .map(|l| l.words.as_str())
            });
            let stdio = table().stdio_functions.contains(&function)
                || site.frames.iter().any(|f| {
                    f.function
                        .as_deref()
                        .is_some_and(|n| n.starts_with("_IO_") && !n.starts_with("_IO_str"))
                });
            for lock in &mut site.locks {
                let symbol = symbols
                    .entry(lock.object)
                    .or_insert_with(|| {
                        if read_modules {
                            data.name(lock.object)
                        } else {
                            None
                        }
                    })
                    .clone();
                let structure = libc.as_ref().and_then(|(l, module)| {
                    let at = lock.object.checked_sub(module.bias)?;
                    (module.lo <= lock.object && lock.object < module.hi).then_some(())?;
                    if let Some(words) = l.name(at) {
                        return Some(Structure::Words(words));
                    }
                    l.is_main_arena(at).then_some(Structure::MainArena)
                });
                let (name, how) = name_lock(
                    profile,
                    sym,
                    lock.object,
                    symbol,
                    &function,
                    Waiter {
                        allocator,
                        stdio,
                        takes,
                        structure,
                    },
                );
                // A futex word the interposer saw waits on: the runtime's object, by its symbol
                // where it has one (a per-thread parker word has none of its own).
                if let Some(w) = words.get(lock.object) {
                    lock.name = match how {
                        "symbol" => format!("the {} {name}", w.object),
                        _ => format!("the {}", w.object),
                    };
                    lock.how = "runtime";
                    continue;
                }
                // A lock the pthread hooks know (a program's mutex waited on inside malloc's
                // call chain is not an arena): one name in every section.
                if matches!(how, "allocator" | "address" | "libc-address")
                    && let Some(kind) = pthread_locks.get(&lock.object)
                {
                    lock.name = format!("the pthread {kind} at {:#x}", lock.object);
                    lock.how = "pthread";
                    continue;
                }
                lock.name = name;
                lock.how = how;
            }
        }
    }
    // One name per lock word: a site whose stack did not show what the lock is (a wall
    // sample's stack is a scan, and may miss the stdio frame) takes the name another site gave
    // the same word. GNU's fprintf lock had read "the lock of a FILE (at 0x558f7a96aa40) (134
    // samples), the lock at 0x558f7a96aa40 (3 samples)" under the suite's load.
    let mut named: HashMap<u64, (String, &'static str)> = HashMap::new();
    for lock in report
        .threads
        .iter()
        .flat_map(|t| &t.sites)
        .flat_map(|s| &s.locks)
        .filter(|l| !matches!(l.how, "address" | "libc-address"))
    {
        named
            .entry(lock.object)
            .or_insert_with(|| (lock.name.clone(), lock.how));
    }
    for lock in report
        .threads
        .iter_mut()
        .flat_map(|t| &mut t.sites)
        .flat_map(|s| &mut s.locks)
        .filter(|l| matches!(l.how, "address" | "libc-address"))
    {
        if let Some((name, how)) = named.get(&lock.object) {
            lock.name.clone_from(name);
            lock.how = how;
        }
    }
}

/// libc's file read for the locks its structure names (`symbols::libc_locks`), with libc's
/// module in the profile: None when the program did not load glibc or its file is not here.
fn libc_structure(profile: &Profile) -> Option<(LibcLocks, &crate::profile::Module)> {
    let module = profile.modules.iter().find(|m| {
        let name = file_name(&m.path);
        name.starts_with("libc.so") || name.starts_with("libc-")
    })?;
    let groups: Vec<(&[String], &str)> = table()
        .function_locks
        .iter()
        .map(|l| (l.functions.as_slice(), l.words.as_str()))
        .collect();
    Some((
        LibcLocks::read(&module.path, &module.build_id, &groups)?,
        module,
    ))
}

/// What libc's structure says of a lock inside it, without its debug file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Structure<'a> {
    /// Taken by the code of exported functions (`function_locks`), or a standard stream's.
    Words(&'a str),
    MainArena,
}

/// What the waiting site was doing: inside malloc, inside stdio, or in a libc function with a
/// private lock (`function_locks`: its words); and what libc's structure says of the lock.
#[derive(Clone, Copy, Default)]
struct Waiter<'a> {
    allocator: bool,
    stdio: bool,
    takes: Option<&'a str>,
    structure: Option<Structure<'a>>,
}

/// Which package or setting would name what is still unnamed in libc on this system: one line
/// for the report, when a lock of libc is unnamed or a site is shown in a function of libc
/// without symbols (its debug file neither under /usr/lib/debug nor from debuginfod); else None.
pub fn missing_names_hint(
    states: Option<&StateReport>,
    modules: &[crate::profile::Module],
) -> Option<String> {
    let sites = || {
        states
            .into_iter()
            .flat_map(|r| &r.threads)
            .flat_map(|t| &t.sites)
    };
    let in_libc = |f: &Frame| {
        let name = file_name(&f.module);
        name.starts_with("libc.so") || name.starts_with("libc-")
    };
    let missing = sites().any(|s| {
        s.locks.iter().any(|l| l.how == "libc-address")
            || s.frames
                .get(
                    crate::symbols::called_frame(&s.frames, s.user)
                        .unwrap_or_else(|| s.decided_by.unwrap_or(0)),
                )
                .is_some_and(|f| f.function.is_none() && in_libc(f))
    });
    // Only where this machine's libc is the profile's (a debug file installed here would name
    // it) and its debug file is neither installed nor served by debuginfod.
    if !missing || !libc_debug_file_missing(modules) {
        return None;
    }
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    Some(format!(
        "names: libc.so.6 has no debug file here, so some of glibc's locks and functions are unnamed; {}",
        names_advice(&os, std::env::var("DEBUGINFOD_URLS").ok().as_deref())
    ))
}

/// Whether the profile's libc is this machine's (its file, with the profile's build id) and has no
/// debug file here, nor from debuginfod.
fn libc_debug_file_missing(modules: &[crate::profile::Module]) -> bool {
    use object::Object;
    let Some(libc) = modules.iter().find(|m| {
        let name = file_name(&m.path);
        name.starts_with("libc.so") || name.starts_with("libc-")
    }) else {
        return false;
    };
    let here = std::fs::read(&libc.path).ok().is_some_and(|data| {
        object::File::parse(&*data).is_ok_and(|f| {
            libc.build_id.is_empty()
                || f.build_id()
                    .ok()
                    .flatten()
                    .is_some_and(|id| id == libc.build_id.as_slice())
        })
    });
    let root = std::env::var_os("STALLSCOPE_DEBUG_ROOT")
        .map_or_else(|| std::path::PathBuf::from("/usr/lib/debug"), Into::into);
    here && crate::symbols::debuginfod::debug_file(&libc.build_id, &root).is_none()
}

/// What to install or set, for the distribution `/etc/os-release` (its text) describes.
fn names_advice(os_release: &str, debuginfod_urls: Option<&str>) -> String {
    let field = |key: &str| {
        os_release.lines().find_map(|l| {
            l.strip_prefix(key)?
                .strip_prefix('=')
                .map(|v| v.trim_matches('"').to_string())
        })
    };
    let ids = format!(
        "{} {}",
        field("ID").unwrap_or_default(),
        field("ID_LIKE").unwrap_or_default()
    );
    let has = |id: &str| ids.split_whitespace().any(|w| w == id);
    let advice = if has("ubuntu") {
        "on Ubuntu: apt install libc6-dbg, or set DEBUGINFOD_URLS=https://debuginfod.ubuntu.com"
            .to_string()
    } else if has("debian") {
        "on Debian: apt install libc6-dbg, or set DEBUGINFOD_URLS=https://debuginfod.debian.net"
            .to_string()
    } else if has("fedora") && !has("rhel") {
        "on Fedora: dnf debuginfo-install glibc, or set DEBUGINFOD_URLS=https://debuginfod.fedoraproject.org".to_string()
    } else if has("rhel") || has("centos") || has("fedora") {
        "on RHEL and its rebuilds: dnf debuginfo-install glibc (or set DEBUGINFOD_URLS to your distribution's debuginfod server)".to_string()
    } else {
        DEBUG_FILE_HINT.replace("glibc's names need libc's debug file: ", "install ")
    };
    match debuginfod_urls.filter(|u| !u.trim().is_empty()) {
        Some(urls) => format!("DEBUGINFOD_URLS ({urls}) gave none; {advice}"),
        None => advice,
    }
}

/// Where names of glibc's own locks come from when libc's debug file is missing.
pub const DEBUG_FILE_HINT: &str = "glibc's names need libc's debug file: libc6-dbg (Debian, Ubuntu), glibc-debuginfo (Fedora, RHEL: dnf debuginfo-install glibc), or DEBUGINFOD_URLS set";

/// The words for one lock address, given its data symbol (module, symbol) if any and what the
/// waiting site was doing.
fn name_lock(
    profile: &Profile,
    sym: &mut Symbolizer,
    object: u64,
    symbol: Option<(String, String)>,
    function: &str,
    waiter: Waiter,
) -> (String, &'static str) {
    let Waiter {
        allocator,
        stdio,
        takes,
        structure,
    } = waiter;
    if let Some((module, symbol)) = symbol {
        let in_libc = module.starts_with("libc.so") || module.starts_with("libc-");
        if in_libc && table().arena_symbols.contains(&symbol) {
            let words = table()
                .symbols
                .iter()
                .find(|w| w.symbol == symbol)
                .map_or_else(
                    || format!("malloc's arena lock ({symbol})"),
                    |w| w.words.clone(),
                );
            return (words, "allocator");
        }
        if in_libc && let Some(w) = table().symbols.iter().find(|w| w.symbol == symbol) {
            return (w.words.replace("{function}", function), "symbol");
        }
        return (format!("{symbol} ({module})"), "symbol");
    }
    match structure {
        Some(Structure::MainArena) => {
            let words = table()
                .symbols
                .iter()
                .find(|w| w.symbol == "main_arena")
                .map_or("malloc's arena lock (main_arena)", |w| w.words.as_str());
            return (words.to_string(), "allocator");
        }
        Some(Structure::Words(words)) => return (words.to_string(), "libc-structure"),
        None => {}
    }
    if let Some(name) = init_site(profile, sym, object) {
        return (name, "init-site");
    }
    if allocator {
        return (
            format!("malloc's arena lock (a thread's arena, at {object:#x})"),
            "allocator",
        );
    }
    if stdio {
        return (format!("the lock of a FILE (at {object:#x})"), "stdio");
    }
    let module = profile
        .modules
        .iter()
        .rfind(|m| m.lo <= object && object < m.hi)
        .map(|m| file_name(&m.path));
    let in_libc = module.is_some_and(|m| m.starts_with("libc.so") || m.starts_with("libc-"));
    if in_libc && let Some(words) = takes {
        return (words.to_string(), "function");
    }
    (
        format!(
            "the lock at {object:#x}{}",
            module.map(|m| format!(" in {m}")).unwrap_or_default()
        ),
        // A lock of libc left unnamed: its debug file would name it (DEBUG_FILE_HINT).
        if in_libc { "libc-address" } else { "address" },
    )
}

/// A lock on the heap initialised by `pthread_mutex_init` / `pthread_rwlock_init` with a sampled
/// stack: the user frame that initialised it.
fn init_site(profile: &Profile, sym: &mut Symbolizer, object: u64) -> Option<String> {
    let site = profile
        .lock_sites
        .iter()
        .filter(|l| l.address == object && l.role == LockRole::Init)
        .max_by_key(|l| l.events)?;
    let frames = sym.stack(profile.stacks.get(&site.stack)?);
    let f = frames.get(user_frame(&frames))?;
    f.function.as_ref()?;
    Some(format!("the lock initialised in {}", f.short_text()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_names_the_arena() {
        let t = table();
        assert!(
            t.arena_symbols
                .iter()
                .all(|a| t.symbols.iter().any(|w| &w.symbol == a))
        );
        assert!(t.stdio_functions.iter().any(|f| f == "fprintf"));
    }

    /// A frame of libc's code, by function name.
    fn libc_frame(name: &str) -> Frame {
        Frame {
            function: Some(name.into()),
            file: None,
            line: None,
            module: "libc.so.6".into(),
            offset: 0,
            inlined: false,
        }
    }

    /// One lock word, one name: a site whose scanned stack missed the stdio frame takes the name
    /// another site gave the word (GNU fprintf's FILE lock had read "the lock of a FILE (at ...)
    /// (134 samples), the lock at ... (3 samples)" under the suite's load).
    #[test]
    fn a_lock_word_gets_one_name_at_every_site() {
        let f = libc_frame;
        let site = |frames: Vec<Frame>, object: u64| StateSite {
            category: Category::Lock,
            frames,
            locks: vec![super::super::states::WaitedLock {
                object,
                samples: 3,
                ..Default::default()
            }],
            ..StateSite::default()
        };
        let mut report = StateReport {
            threads: vec![
                super::super::states::ThreadStates {
                    sites: vec![site(
                        vec![f("__lll_lock_wait_private"), f("_IO_fwrite"), f("main")],
                        0x5000,
                    )],
                    ..Default::default()
                },
                super::super::states::ThreadStates {
                    sites: vec![
                        site(vec![f("__lll_lock_wait_private"), f("main")], 0x5000),
                        site(vec![f("__lll_lock_wait_private"), f("main")], 0x6000),
                    ],
                    ..Default::default()
                },
            ],
            ..StateReport::default()
        };
        let profile = Profile::default();
        let mut sym = Symbolizer::offline(&profile);
        let words = super::super::futex::Words::default();
        name_site_locks(
            &mut report,
            &profile,
            &mut sym,
            false,
            &words,
            &HashMap::new(),
        );
        let names: Vec<(&str, &str)> = report
            .threads
            .iter()
            .flat_map(|t| &t.sites)
            .map(|s| (s.locks[0].name.as_str(), s.locks[0].how))
            .collect();
        assert_eq!(
            names,
            [
                ("the lock of a FILE (at 0x5000)", "stdio"),
                ("the lock of a FILE (at 0x5000)", "stdio"),
                ("the lock at 0x6000", "address"),
            ]
        );
    }

    #[test]
    fn a_runtime_lock_under_stale_malloc_frames_is_not_an_arena_wait() {
        let f = libc_frame;
        let lock = |how: &'static str| super::super::states::WaitedLock {
            object: 0x5555_0000,
            samples: 10,
            ns: 1_000_000,
            name: "a lock".into(),
            how,
        };
        // A futex wait decided at `syscall`, with `malloc` further up the scanned stack.
        let mut site = StateSite {
            frames: vec![f("syscall"), f("Mutex::lock"), f("malloc"), f("main")],
            decided_by: Some(0),
            ..StateSite::default()
        };
        assert!(is_arena_wait(&site), "no lock caught: the frames decide");
        site.locks = vec![lock("runtime")];
        assert!(
            !is_arena_wait(&site),
            "a runtime's futex word is that runtime's lock"
        );
        site.locks = vec![lock("pthread")];
        assert!(
            !is_arena_wait(&site),
            "a pthread lock is not glibc's arena lock"
        );
        site.locks = vec![lock("address")];
        assert!(
            is_arena_wait(&site),
            "an unknown word inside malloc stays the arena's"
        );
        site.locks = vec![lock("allocator")];
        site.frames = vec![f("__lll_lock_wait_private"), f("main")];
        assert!(is_arena_wait(&site), "a word named as an arena's lock");
    }

    #[test]
    fn glibc_2_42_slow_paths_are_allocator_frames() {
        let f = |name: &str| Frame {
            function: Some(name.into()),
            file: None,
            line: None,
            module: "/opt/glibc-2.42/lib/libc.so.6".into(),
            offset: 0,
            inlined: false,
        };
        for name in ["__libc_malloc2", "__libc_calloc2", "_int_malloc", "malloc"] {
            assert!(is_allocator_frame(&f(name)), "{name}");
        }
        for name in ["memcpy2", "random", "__libc_write"] {
            assert!(!is_allocator_frame(&f(name)), "{name}");
        }
    }

    #[test]
    fn each_function_lock_group_takes_one_lock_of_the_system_libc() {
        let groups: Vec<(&[String], &str)> = table()
            .function_locks
            .iter()
            .map(|l| (l.functions.as_slice(), l.words.as_str()))
            .collect();
        let Some(libc) = LibcLocks::read("/lib/x86_64-linux-gnu/libc.so.6", &[], &groups) else {
            eprintln!("SKIPPED: no x86-64 glibc at /lib/x86_64-linux-gnu/libc.so.6");
            return;
        };
        for (_, words) in &groups {
            let at = libc.addresses_named(words);
            assert_eq!(at.len(), 1, "{words}: {at:x?}");
            assert!(!libc.is_main_arena(at[0]), "{words}");
        }
    }

    #[test]
    fn the_advice_fits_the_distribution() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n";
        let ubuntu = "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n";
        let fedora = "NAME=\"Fedora Linux\"\nID=fedora\n";
        let alma = "ID=\"almalinux\"\nID_LIKE=\"rhel centos fedora\"\n";
        assert!(names_advice(debian, None).contains("libc6-dbg"));
        assert!(names_advice(debian, None).contains("debuginfod.debian.net"));
        assert!(names_advice(ubuntu, None).contains("debuginfod.ubuntu.com"));
        assert!(names_advice(fedora, None).contains("dnf debuginfo-install glibc"));
        assert!(names_advice(fedora, None).contains("debuginfod.fedoraproject.org"));
        assert!(names_advice(alma, None).contains("RHEL"));
        let other = names_advice("ID=arch\n", None);
        assert!(other.contains("libc6-dbg") && other.contains("DEBUGINFOD_URLS"));
        assert!(
            names_advice(debian, Some("http://x"))
                .starts_with("DEBUGINFOD_URLS (http://x) gave none")
        );
    }

    #[test]
    fn libc_symbols_get_their_words() {
        let profile = Profile::default();
        let mut sym = Symbolizer::offline(&profile);
        let mut named = |symbol: &str, function: &str| {
            name_lock(
                &profile,
                &mut sym,
                0x1000,
                Some(("libc.so.6".into(), symbol.into())),
                function,
                Waiter::default(),
            )
        };
        assert_eq!(
            named("main_arena", "malloc"),
            ("malloc's arena lock (main_arena)".into(), "allocator")
        );
        assert_eq!(
            named("_IO_stdfile_1_lock", "fprintf").0,
            "the lock of stdout"
        );
        assert_eq!(named("lock", "random").0, "random()'s lock");
        assert_eq!(
            named("tzset_lock", "localtime_r").0,
            "the timezone lock (tzset_lock)"
        );
        assert_eq!(named("other_lock", "f").0, "other_lock (libc.so.6)");
    }

    #[test]
    fn heap_locks_are_named_by_what_holds_them_else_by_address() {
        let profile = Profile::default();
        let mut sym = Symbolizer::offline(&profile);
        let mut named = |allocator, stdio| {
            name_lock(
                &profile,
                &mut sym,
                0x7f00_0400_0030,
                None,
                "f",
                Waiter {
                    allocator,
                    stdio,
                    takes: None,
                    structure: None,
                },
            )
        };
        assert_eq!(named(true, false).1, "allocator");
        assert!(named(true, false).0.contains("0x7f0004000030"));
        assert_eq!(named(false, true).1, "stdio");
        assert_eq!(
            named(false, false),
            ("the lock at 0x7f0004000030".into(), "address")
        );
    }
}
