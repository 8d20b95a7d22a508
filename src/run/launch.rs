//! Starting the program: the environment it gets (the user's own, byte for byte and in order,
//! with the preload added to LD_PRELOAD and the few variables the interposer needs appended), and
//! the paths of the run's profiles, which name the program's pid and so are completed in the
//! child between its start and exec, where the pid is known (`Launch::in_child`).

use std::ffi::{CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::profile::tree::CHILDREN_SUFFIX;

unsafe extern "C" {
    static mut environ: *const *const libc::c_char;
}

/// Variables stallscope sets for the interposer. A stale value in the user's environment (from an
/// outer run, say) is dropped rather than passed on: the interposer's defaults are the CLI's.
pub const MANAGED: [&str; 16] = [
    crate::options::DIR.env,
    crate::options::INDEX.env,
    crate::options::SUPERVISOR.env,
    crate::options::OUTPUT.env,
    crate::options::NO_CHILDREN.env,
    crate::options::TIMING.env,
    crate::options::TIMING_PERIOD.env,
    crate::options::SNAPSHOT_MS.env,
    crate::options::SNAPSHOT_SIGNAL.env,
    crate::options::SAMPLE_HZ.env,
    crate::options::WALL_HZ.env,
    crate::options::STACK_PERIOD.env,
    crate::options::STACK_BYTES.env,
    crate::options::UNWINDER.env,
    crate::options::PAUSED.env,
    crate::options::CONTINUOUS.env,
];

/// Where the launched process's profile goes.
#[derive(Clone, Debug)]
pub enum RootPath {
    /// `-o FILE`, exactly.
    Given(PathBuf),
    /// `DIR/stallscope-NAME-PID.prof` (`.N.prof` before `.prof` if taken), completed in the child.
    Default { dir: PathBuf, name: String },
}

/// The program's name as the default profile name shows it: the base name of argv[0], with
/// characters other than letters, digits and `._-+` replaced by `_` (as the interposer does).
pub fn profile_name(argv0: &OsStr) -> String {
    let bytes = argv0.as_bytes();
    let base = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
    let name: String = base
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b".-_+".contains(&b) {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "program".into()
    } else {
        name
    }
}

/// A `KEY=path` entry whose path may contain the pid, in a buffer allocated before the child
/// starts and filled in the child without allocating.
struct PathEntry {
    buf: Vec<u8>,
    /// Where the path starts in `buf` (after `KEY=`).
    path_at: usize,
    prefix: Vec<u8>,
    /// Whether the pid (and, on a collision, `.N`) goes between `prefix` and `suffix`.
    with_pid: bool,
    suffix: Vec<u8>,
}

impl PathEntry {
    fn new(key: &str, prefix: &[u8], with_pid: bool, suffix: &[u8]) -> PathEntry {
        let path_at = key.len() + 1;
        // Room for the pid (10 digits), `.N` (up to 3) and the NUL.
        let len = path_at + prefix.len() + 10 + 3 + suffix.len() + 1;
        let mut buf = vec![0u8; len];
        buf[..key.len()].copy_from_slice(key.as_bytes());
        buf[key.len()] = b'=';
        let mut entry = PathEntry {
            buf,
            path_at,
            prefix: prefix.to_vec(),
            with_pid,
            suffix: suffix.to_vec(),
        };
        entry.fill(0, 0);
        entry
    }

    /// Writes the path for `pid` (and collision number `attempt`, 0 for none). No allocation.
    fn fill(&mut self, pid: u32, attempt: u32) {
        let mut at = self.path_at;
        let mut put = |buf: &mut [u8], bytes: &[u8]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&mut self.buf, &self.prefix);
        if self.with_pid {
            let mut digits = [0u8; 10];
            put(&mut self.buf, decimal(pid, &mut digits));
            if attempt > 0 {
                put(&mut self.buf, b".");
                put(&mut self.buf, decimal(attempt.min(99), &mut digits));
            }
        }
        put(&mut self.buf, &self.suffix);
        self.buf[at] = 0;
    }

    fn entry(&self) -> *const libc::c_char {
        self.buf.as_ptr().cast()
    }

    fn path(&self) -> *const libc::c_char {
        self.buf[self.path_at..].as_ptr().cast()
    }

    /// The path as last filled (for the parent, which knows the pid after spawn).
    fn path_buf(&self) -> PathBuf {
        let end = self.buf[self.path_at..]
            .iter()
            .position(|&b| b == 0)
            .map_or(self.buf.len(), |p| self.path_at + p);
        PathBuf::from(OsStr::from_bytes(&self.buf[self.path_at..end]))
    }
}

/// The decimal digits of `n` in `out`, without allocating.
fn decimal(mut n: u32, out: &mut [u8; 10]) -> &[u8] {
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &out[i..];
        }
    }
}

/// Everything the child needs between its start and exec, prepared in the parent.
pub struct Launch {
    /// The user's environment entries, LD_PRELOAD updated, then the fixed STALLSCOPE_ ones.
    fixed: Vec<CString>,
    output: PathEntry,
    /// STALLSCOPE_DIR: the run's directory for the other processes (None with --no-children).
    children: Option<PathEntry>,
    /// Pointers to all entries, NULL-terminated; rebuilt in the child after filling.
    pointers: Vec<*const libc::c_char>,
    /// The collision number the child chose (it writes it here: it shares our memory until its
    /// exec, spawn.rs).
    choice: u32,
}

// SAFETY: the raw pointers point into buffers owned by the same struct; it is only used by the
// thread that spawns the child, and in the child.
unsafe impl Send for Launch {}
unsafe impl Sync for Launch {}

impl Launch {
    /// `library` is prepended to LD_PRELOAD; `settings` are the STALLSCOPE_ variables to set.
    pub fn new(
        library: &Path,
        settings: &[(&str, String)],
        root: &RootPath,
        with_children: bool,
    ) -> Launch {
        let mut fixed = Vec::new();
        let mut preload_done = false;
        for entry in current_environment() {
            let bytes = entry.as_bytes();
            let key = bytes.split(|&b| b == b'=').next().unwrap_or(bytes);
            if MANAGED.iter().any(|m| m.as_bytes() == key) {
                continue;
            }
            if key == b"LD_PRELOAD" && bytes.len() > key.len() && !preload_done {
                let existing = &bytes[key.len() + 1..];
                let mut value = b"LD_PRELOAD=".to_vec();
                value.extend_from_slice(library.as_os_str().as_bytes());
                if !existing.is_empty() {
                    value.push(b' ');
                    value.extend_from_slice(existing);
                }
                fixed.push(CString::new(value).expect("no NUL inside an environment entry"));
                preload_done = true;
                continue;
            }
            fixed.push(entry);
        }
        if !preload_done {
            let mut value = b"LD_PRELOAD=".to_vec();
            value.extend_from_slice(library.as_os_str().as_bytes());
            fixed.push(CString::new(value).expect("the library path has no NUL"));
        }
        for (key, value) in settings {
            fixed.push(CString::new(format!("{key}={value}")).expect("settings have no NUL"));
        }
        let output = match root {
            RootPath::Given(path) => PathEntry::new(
                crate::options::OUTPUT.env,
                path.as_os_str().as_bytes(),
                false,
                b"",
            ),
            RootPath::Default { dir, name } => {
                let mut prefix = dir.as_os_str().as_bytes().to_vec();
                prefix.extend_from_slice(format!("/stallscope-{name}-").as_bytes());
                PathEntry::new(crate::options::OUTPUT.env, &prefix, true, b".prof")
            }
        };
        let children = with_children.then(|| {
            let mut suffix = output.suffix.clone();
            suffix.extend_from_slice(CHILDREN_SUFFIX.as_bytes());
            PathEntry::new(
                crate::options::DIR.env,
                &output.prefix,
                output.with_pid,
                &suffix,
            )
        });
        let count = fixed.len() + 3;
        let mut launch = Launch {
            fixed,
            output,
            children,
            pointers: Vec::with_capacity(count),
            choice: 0,
        };
        launch.point();
        launch
    }

    /// Rebuilds the pointer array in place (its capacity was reserved: no allocation).
    fn point(&mut self) {
        self.pointers.clear();
        for entry in &self.fixed {
            self.pointers.push(entry.as_ptr());
        }
        self.pointers.push(self.output.entry());
        if let Some(children) = &self.children {
            self.pointers.push(children.entry());
        }
        self.pointers.push(std::ptr::null());
    }

    /// In the child, between its start and exec (async-signal-safe: no allocation, no locks):
    /// picks the profile's path for this pid, avoiding files (and a run's directory for the other
    /// processes) left by an earlier process with the same pid, and returns the prepared
    /// environment for exec. The run's directory is made by the first other process that writes
    /// there (the interposer's `ss_create_profile`), or by the supervisor for the profiles it
    /// unpacks. The child shares the supervisor's memory (spawn.rs), so `environ` is left alone.
    pub fn in_child(&mut self) -> *const *const libc::c_char {
        // SAFETY: getpid and access take NUL-terminated paths from our own buffers.
        unsafe {
            let pid = libc::getpid() as u32;
            for attempt in 0..100 {
                self.output.fill(pid, attempt);
                if let Some(children) = &mut self.children {
                    children.fill(pid, attempt);
                }
                let taken = libc::access(self.output.path(), libc::F_OK) == 0
                    || self
                        .children
                        .as_ref()
                        .is_some_and(|c| libc::access(c.path(), libc::F_OK) == 0);
                if !taken || !self.output.with_pid {
                    self.choice = attempt;
                    break;
                }
            }
            self.point();
        }
        self.pointers.as_ptr()
    }

    /// The root profile's path and the run's directory as the child chose them for its pid.
    pub fn chosen_paths(&mut self, pid: u32) -> (PathBuf, Option<PathBuf>) {
        let attempt = self.choice;
        self.output.fill(pid, attempt);
        if let Some(children) = &mut self.children {
            children.fill(pid, attempt);
        }
        (
            self.output.path_buf(),
            self.children.as_ref().map(PathEntry::path_buf),
        )
    }

    /// The environment as the program sees it (for tests): entries without the pid filled in.
    #[cfg(test)]
    fn entries(&self) -> Vec<String> {
        self.pointers
            .iter()
            .take_while(|p| !p.is_null())
            // SAFETY: every pointer is a NUL-terminated entry owned by `self`.
            .map(|&p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .collect()
    }
}

/// This process's environment, entry by entry as the C library holds it (order, duplicates and
/// all), which is what the program would get without stallscope.
fn current_environment() -> Vec<CString> {
    let mut out = Vec::new();
    // SAFETY: environ is a NULL-terminated array of C strings; nothing modifies it meanwhile
    // (stallscope never sets variables in its own process).
    unsafe {
        let mut p = environ;
        if p.is_null() {
            return out;
        }
        while !(*p).is_null() {
            out.push(CStr::from_ptr(*p).to_owned());
            p = p.add(1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_like_the_interposer() {
        assert_eq!(
            profile_name(OsStr::new("/usr/bin/python3.11")),
            "python3.11"
        );
        assert_eq!(profile_name(OsStr::new("./my prog")), "my_prog");
        assert_eq!(profile_name(OsStr::new("")), "program");
    }

    #[test]
    fn paths_are_filled_without_allocating_into_room_made_before() {
        let mut e = PathEntry::new("STALLSCOPE_OUTPUT", b"/d/stallscope-x-", true, b".prof");
        e.fill(4_194_304, 0);
        assert_eq!(e.path_buf(), Path::new("/d/stallscope-x-4194304.prof"));
        e.fill(u32::MAX, 99);
        assert_eq!(
            e.path_buf(),
            Path::new("/d/stallscope-x-4294967295.99.prof")
        );
        e.fill(7, 2);
        assert_eq!(e.path_buf(), Path::new("/d/stallscope-x-7.2.prof"));
        let entry = unsafe { CStr::from_ptr(e.entry()) };
        assert_eq!(
            entry.to_str().unwrap(),
            "STALLSCOPE_OUTPUT=/d/stallscope-x-7.2.prof"
        );
        let fixed = PathEntry::new(crate::options::DIR.env, b"/o/run.prof", false, b".children");
        assert_eq!(fixed.path_buf(), Path::new("/o/run.prof.children"));
    }

    #[test]
    fn the_environment_keeps_the_users_and_adds_only_what_the_interposer_needs() {
        let root = RootPath::Given(PathBuf::from("/tmp/x.prof"));
        let launch = Launch::new(
            Path::new("/lib/ss.so"),
            &[("STALLSCOPE_SUPERVISOR", "1".into())],
            &root,
            true,
        );
        let entries = launch.entries();
        let ours: Vec<&String> = entries
            .iter()
            .filter(|e| e.starts_with("STALLSCOPE_") || e.starts_with("LD_PRELOAD="))
            .collect();
        let preload = ours.iter().find(|e| e.starts_with("LD_PRELOAD=")).unwrap();
        assert!(preload.starts_with("LD_PRELOAD=/lib/ss.so"), "{preload}");
        assert!(ours.contains(&&"STALLSCOPE_OUTPUT=/tmp/x.prof".to_string()));
        assert!(ours.contains(&&"STALLSCOPE_DIR=/tmp/x.prof.children".to_string()));
        assert!(ours.contains(&&"STALLSCOPE_SUPERVISOR=1".to_string()));
        // Everything else is the process's own environment, in its order.
        let others: Vec<&String> = entries
            .iter()
            .filter(|e| !e.starts_with("STALLSCOPE_") && !e.starts_with("LD_PRELOAD="))
            .collect();
        let own: Vec<String> = current_environment()
            .into_iter()
            .map(|c| c.to_string_lossy().into_owned())
            .filter(|e| !e.starts_with("STALLSCOPE_") && !e.starts_with("LD_PRELOAD="))
            .collect();
        assert_eq!(others.len(), own.len());
        assert!(others.iter().zip(&own).all(|(a, b)| *a == b));
    }
}
