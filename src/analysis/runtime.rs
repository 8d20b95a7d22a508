//! Runtimes that wait outside pthread (Rust's std, parking_lot, abseil, libstdc++'s atomic waits,
//! rayon, crossbeam, tokio, TBB): where in a waiting thread's stack the runtime makes the wait,
//! what it calls the object and what kind of wait it is. The table is data
//! (`runtime_waits.json`); its patterns name functions in the runtimes' own namespaces only, so
//! no user function can match one.

use crate::symbols::{Frame, qualified_name};
use serde::Deserialize;
use std::sync::OnceLock;

/// What a wait made by a runtime is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Waiting for another thread to release something: a lock wait.
    Lock,
    /// Waiting for an event (a condition, a park, a once, a channel, a latch).
    Wait,
    /// A runtime's worker waiting for work: never a cause.
    Idle,
    /// The runtime's own work on the caller's behalf (a release, a try, a query): never a wait.
    /// Its entry keeps such a function of a runtime's module from reading as the module's idle
    /// team (a single thread's releases of its omp locks had read as 12-17% idle).
    Work,
}

impl Role {
    pub fn key(self) -> &'static str {
        match self {
            Role::Lock => "lock",
            Role::Wait => "wait",
            Role::Idle => "idle",
            Role::Work => "work",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct RuntimeWait {
    /// The function's name pattern (empty: a `module` entry).
    #[serde(default)]
    pub function: String,
    /// A module's file name pattern: any frame in it without an entry of its own (libgomp, whose
    /// internals have no names in a stripped library).
    #[serde(default)]
    pub module: String,
    pub runtime: String,
    /// What the runtime calls the object: `std::sync::Mutex`, `rayon's idle worker`.
    pub object: String,
    pub role: Role,
    /// The runtime sleeps on a word of the waiting thread's own (a parker): the object's address
    /// is not the word's, so waits are grouped by the user frame that took it.
    #[serde(default)]
    pub per_thread: bool,
    /// Every acquisition calls it, contended or not (a lock's entry point, not its slow path): a
    /// CPU sample in it is a wait only where the thread spins or goes to sleep.
    #[serde(default)]
    pub every_call: bool,
}

impl RuntimeWait {
    /// Whether the entry names a module, not a function: the module's frames without an entry of
    /// their own, whatever they do (a guess from where the wait is, not from what it is).
    pub fn by_module(&self) -> bool {
        self.function.is_empty()
    }
}

/// A runtime's shared library, by its file name (`runtime_waits.json`, `libraries`).
#[derive(Debug, Clone, Deserialize)]
pub struct Library {
    pub module: String,
    pub runtime: String,
}

impl Library {
    /// What a lock that a futex wait in this library stands for is called when no entry point
    /// names it: `lock in libabsl_synchronization` (the file name without `.so` and version).
    pub fn lock_words(module_path: &str) -> String {
        let file = crate::symbols::file_name(module_path);
        format!("lock in {}", file.split(".so").next().unwrap_or(file))
    }
}

#[derive(Deserialize)]
struct Table {
    entries: Vec<RuntimeWait>,
    #[serde(default)]
    libraries: Vec<Library>,
}

static TABLE_TEXT: &str = include_str!("runtime_waits.json");

fn whole_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        serde_json::from_str::<Table>(TABLE_TEXT).expect("runtime_waits.json is valid")
    })
}

fn table() -> &'static [RuntimeWait] {
    &whole_table().entries
}

/// The runtime whose shared library `module` (a path or a file name) is, if any.
pub fn library_of(module: &str) -> Option<&'static Library> {
    let file = crate::symbols::file_name(module);
    whole_table()
        .libraries
        .iter()
        .find(|l| super::states::glob(&l.module, file))
}

/// The runtime library of the innermost frame of `frames` that lies in one (the interposer's own
/// frames are skipped by being in none), with that frame's index.
pub fn library_in(frames: &[Frame]) -> Option<(&'static Library, usize)> {
    frames
        .iter()
        .enumerate()
        .find_map(|(i, f)| library_of(&f.module).map(|l| (l, i)))
}

/// A function's name as the table's patterns are written: without the return type, the
/// arguments and the angle brackets newer Rust puts around an inherent impl's type
/// (`<std::sys::sync::mutex::futex::Mutex>::lock_contended` reads
/// `std::sys::sync::mutex::futex::Mutex::lock_contended`; a trait impl `<T as Trait>::f` stays).
pub fn plain_name(name: &str) -> String {
    let name = qualified_name(name);
    let name = name.split('(').next().unwrap_or(name).trim();
    if let Some(rest) = name.strip_prefix('<') {
        // The matching '>' of the leading '<'.
        let mut depth = 1;
        for (i, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = &rest[..i];
                        if !inner.contains(" as ") {
                            return format!("{inner}{}", &rest[i + 1..]);
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    name.to_string()
}

/// The table's entry for one function, if any.
pub fn entry_for(function: &str) -> Option<&'static RuntimeWait> {
    let name = plain_name(function);
    table()
        .iter()
        .filter(|e| !e.function.is_empty())
        .find(|e| super::states::glob(&e.function, &name))
}

/// The table's entry for one frame: by its function, else by its module.
pub fn entry_for_frame(f: &Frame) -> Option<&'static RuntimeWait> {
    f.function.as_deref().and_then(entry_for).or_else(|| {
        let file = crate::symbols::file_name(&f.module);
        table()
            .iter()
            .filter(|e| !e.module.is_empty())
            .find(|e| super::states::glob(&e.module, file))
    })
}

/// The runtime wait a stack is in: among the frames inside the program's innermost own frame
/// (innermost first), the outermost one the table knows decides, so that a condition variable
/// used by rayon to put an idle worker to sleep is rayon's idle worker, and a mutex re-taken
/// inside a condition wait stays the wait it serves. The program's own frame ends the search
/// whether it has a name or not: in a stripped library, the body of an OpenMP region (called by
/// `GOMP_parallel` through the interposer's trampoline) is the program's work, not the idle
/// team of the `GOMP_parallel` further out (the master's body read as idle, and its states summed
/// to 147% of its life). Returns the entry and the index of its frame.
pub fn wait_of(frames: &[Frame]) -> Option<(&'static RuntimeWait, usize)> {
    let end = frames
        .iter()
        .position(|f| {
            !crate::symbols::is_runtime_frame(f)
                && entry_for_frame(f).is_none()
                && library_of(&f.module).is_none()
        })
        .unwrap_or(frames.len());
    frames[..end]
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, f)| entry_for_frame(f).map(|e| (e, i)))
        .filter(|(e, _)| e.role != Role::Work)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(name: &str) -> Frame {
        Frame {
            function: Some(name.into()),
            file: None,
            line: None,
            module: "/bin/prog".into(),
            offset: 0,
            inlined: false,
        }
    }

    #[test]
    fn every_runtime_library_is_runtime_code_to_the_symbols() {
        // The symbols layer keeps its own list (it may not read this table): the two agree.
        for l in &whole_table().libraries {
            let module = format!("/usr/lib/{}", l.module.replace('*', "x"));
            let f = Frame {
                module,
                ..frame("f")
            };
            assert!(crate::symbols::is_runtime_frame(&f), "{}", l.module);
        }
    }

    #[test]
    fn angle_brackets_of_inherent_impls_are_dropped() {
        assert_eq!(
            plain_name("<std::sys::sync::mutex::futex::Mutex>::lock_contended"),
            "std::sys::sync::mutex::futex::Mutex::lock_contended"
        );
        assert_eq!(
            plain_name("<parking_lot::raw_mutex::RawMutex as lock_api::mutex::RawMutex>::lock"),
            "<parking_lot::raw_mutex::RawMutex as lock_api::mutex::RawMutex>::lock"
        );
    }

    #[test]
    fn runtime_libraries_are_known_by_their_file_names_as_distributions_ship_them() {
        for (path, runtime) in [
            (
                "/usr/lib/x86_64-linux-gnu/libabsl_synchronization.so.20220623",
                "abseil",
            ),
            ("/usr/lib/x86_64-linux-gnu/libtbb.so.12", "TBB"),
            ("/usr/lib/llvm-14/lib/libomp.so.5", "OpenMP"),
            ("/venv/lib/numba.libs/libtbb-b1ab0e36.so.12", "TBB"),
        ] {
            assert_eq!(library_of(path).map(|l| l.runtime.as_str()), Some(runtime));
        }
        for other in [
            "/usr/lib/libtbbmalloc.so.2",
            "/opt/app/libabsl_tools",
            "/bin/app",
        ] {
            assert!(library_of(other).is_none(), "{other}");
        }
        assert_eq!(
            Library::lock_words("/usr/lib/x86_64-linux-gnu/libabsl_synchronization.so.20220623"),
            "lock in libabsl_synchronization"
        );
    }

    #[test]
    fn a_wait_in_debians_libabsl_is_searched_through_to_its_mutex() {
        // Debian's libabsl_synchronization.so.20220623 (stripped, its dynamic symbols in the
        // inline namespace absl::debian3): Waiter::Wait has no entry and is not the user's frame.
        let absl = |name: &str| Frame {
            module: "/usr/lib/x86_64-linux-gnu/libabsl_synchronization.so.20220623".into(),
            ..frame(name)
        };
        let frames = [
            absl(
                "absl::debian3::synchronization_internal::Waiter::Wait(absl::debian3::synchronization_internal::KernelTimeout)",
            ),
            absl("AbslInternalPerThreadSemWait_debian3"),
            absl("absl::debian3::Mutex::Block(absl::debian3::base_internal::PerThreadSynch*)"),
            absl("absl::debian3::Mutex::LockSlowLoop(absl::debian3::SynchWaitParams*, int)"),
            absl(
                "absl::debian3::Mutex::LockSlow(absl::debian3::MuHowS const*, absl::debian3::Condition const*, int)",
            ),
            absl("absl::debian3::Mutex::Lock()"),
            frame("add_hit"),
        ];
        let (e, i) = wait_of(&frames).expect("named");
        assert_eq!(
            (e.object.as_str(), e.role, i),
            ("absl::Mutex", Role::Lock, 4)
        );
        assert!(e.per_thread);
        assert_eq!(crate::symbols::user_frame(&frames), 6);
        // A condition of abseil's waits inside the Mutex it re-takes: the outermost decides.
        let mut barrier = frames.to_vec();
        barrier.insert(6, absl("absl::debian3::Barrier::Block()"));
        let (e, _) = wait_of(&barrier).expect("named");
        assert_eq!((e.object.as_str(), e.role), ("absl::Barrier", Role::Wait));
        // Unnamed (a build without dynamic symbols): nothing names it, and the search does not
        // stop at the library's first frame.
        let unnamed = Frame {
            function: None,
            ..absl("")
        };
        assert!(wait_of(&[unnamed.clone(), unnamed, frame("add_hit")]).is_none());
    }

    #[test]
    fn the_outermost_runtime_frame_inside_the_user_frame_decides() {
        let rayon_idle = [
            frame("std::sys::pal::unix::futex::futex_wait"),
            frame("<std::sys::sync::condvar::futex::Condvar>::wait_optional_timeout"),
            frame("std::sync::poison::condvar::Condvar::wait"),
            frame("rayon_core::sleep::Sleep::sleep"),
            frame("rayon_core::registry::WorkerThread::wait_until_cold"),
            frame("rayon_core::registry::main_loop"),
        ];
        let (e, _) = wait_of(&rayon_idle).unwrap();
        assert_eq!(e.role, Role::Idle);
        let std_mutex = [
            frame("std::sys::pal::unix::futex::futex_wait"),
            frame("<std::sys::sync::mutex::futex::Mutex>::lock_contended"),
            frame("std::sync::poison::mutex::Mutex<T>::lock"),
            frame("app::record_hit"),
            frame("rayon_core::registry::WorkerThread::wait_until_cold"),
        ];
        let (e, i) = wait_of(&std_mutex).unwrap();
        assert_eq!(
            (e.object.as_str(), e.role, i),
            ("std::sync::Mutex", Role::Lock, 1)
        );
        // A user function named like a runtime's is never taken for it.
        assert!(wait_of(&[frame("my_lock_contended"), frame("main")]).is_none());
        // The program's own frame ends the search, named or not: the body of an OpenMP region in
        // a stripped library is work, not the idle team of the GOMP_parallel that called it.
        let unnamed = |module: &str| Frame {
            function: None,
            module: module.into(),
            ..frame("")
        };
        let body = [
            unnamed("/lib/libwork.so"),
            Frame {
                module: "/tmp/libstallscope.so".into(),
                ..frame("ss_omp_body")
            },
            Frame {
                module: "/lib/x86_64-linux-gnu/libgomp.so.1".into(),
                ..frame("GOMP_parallel")
            },
            unnamed("/lib/libwork.so"),
            frame("main"),
        ];
        assert!(wait_of(&body).is_none());
        // The master at the region's closing barrier is in the runtime: idle.
        let (e, i) = wait_of(&body[2..]).unwrap();
        assert_eq!((e.role, i), (Role::Idle, 0));
        // A release in libgomp is the runtime's work for the caller, not its idle team; the
        // unnamed internals of its module still are.
        let gomp = |name: &str| Frame {
            module: "/lib/x86_64-linux-gnu/libgomp.so.1".into(),
            ..frame(name)
        };
        assert!(wait_of(&[gomp("omp_unset_lock"), frame("main")]).is_none());
        assert!(wait_of(&[gomp("GOMP_critical_name_end"), frame("main")]).is_none());
        let spin = [unnamed("/lib/x86_64-linux-gnu/libgomp.so.1"), frame("main")];
        assert_eq!(wait_of(&spin).unwrap().0.role, Role::Idle);
        // The runtimes as Python wheels bundle them (auditwheel renames each copy): the same.
        for bundled in [
            "/venv/lib/python3.11/site-packages/scikit_learn.libs/libgomp-a34b3233.so.1.0.0",
            "/venv/lib/python3.11/site-packages/torch/lib/libgomp-a34b3233.so.1",
            "/venv/lib/python3.11/site-packages/numba.libs/libtbb-b1ab0e36.so.12",
        ] {
            let spin = [unnamed(bundled), frame("main")];
            assert_eq!(wait_of(&spin).unwrap().0.role, Role::Idle, "{bundled}");
        }
        // Not the runtime's allocator beside it, nor a user library named after it.
        for other in ["/usr/lib/libtbbmalloc.so.2", "/opt/app/libgompute.so"] {
            assert!(
                wait_of(&[unnamed(other), frame("main")]).is_none(),
                "{other}"
            );
        }
    }
}
