//! Python frames in stacks (docs/STACKS.md, "Python frames"): CPython programs run under
//! stallscope on several interpreters (Debian's 3.11, and 3.8, 3.10, 3.12 and 3.13 where pyenv
//! or the system has them), and their stacks name the Python function and line beside the native
//! frames: of pure-Python threads on the GIL, of threads calling a C library that releases the
//! GIL, and of threads contending on a native lock; and threads carry the names Python gives them.

mod common;

use common::{TempDir, have, profile, report_json};
use serde_json::Value;
use std::path::PathBuf;

/// An interpreter of `minor` (3.minor): Debian's for 3.11, else pyenv's newest of that minor,
/// else `python3.minor` on the PATH; under the missing-tool policy.
fn interpreter(minor: u32) -> Option<String> {
    let name = format!("python3.{minor}");
    let mut found: Option<PathBuf> = None;
    if minor == 11 && std::path::Path::new("/usr/bin/python3.11").exists() {
        found = Some("/usr/bin/python3.11".into());
    }
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
        .map(|r| r.join("versions"));
    if found.is_none()
        && let Some(Ok(entries)) = pyenv.map(std::fs::read_dir)
    {
        let mut versions: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("3.{minor}.")) && !n.ends_with('t'))
            })
            .map(|p| p.join("bin/python"))
            .filter(|p| p.exists())
            .collect();
        versions.sort();
        found = versions.pop();
    }
    if found.is_none() {
        let on_path = std::process::Command::new(&name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        found = on_path.then(|| name.clone().into());
    }
    have(&name, found.is_some(), &format!("pyenv install 3.{minor}"))
        .then(|| found.expect("found").to_string_lossy().into_owned())
}

fn frames(v: &Value) -> Vec<(String, Option<u64>)> {
    v["frames"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .map(|f| {
                    (
                        f["function"].as_str().unwrap_or("").to_string(),
                        f["line"].as_u64(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The line of `script` that holds `text`, from 1.
fn line_of(script: &str, text: &str) -> u64 {
    script
        .lines()
        .position(|l| l.contains(text))
        .expect("the line is in the script") as u64
        + 1
}

const GIL: &str = r#"import threading

def spin(n):
    total = 0
    for i in range(n):
        total += i * i  # the loop
    return total

class Worker(threading.Thread):
    def run(self):
        spin(1_500_000)

ts = [Worker() for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
"#;

/// Pure-Python threads on the GIL: the CPU samples' stacks name `spin` at its loop's lines,
/// called from `Worker.run` (3.8-3.10: `run`, the versions without qualified names), each
/// line decoded from its version's line table (3.8's lnotab, 3.10's ranges, 3.11's locations).
#[test]
fn pure_python_threads_name_the_function_and_line() {
    for minor in [8, 10, 11, 12, 13] {
        let Some(python) = interpreter(minor) else {
            continue;
        };
        let dir = TempDir::new(&format!("py-gil-{minor}"));
        let script = dir.join("gil.py");
        std::fs::write(&script, GIL).unwrap();
        let cmd = [python.as_str(), script.to_str().unwrap()];
        let (_, prof) = profile(dir.path(), "gil.prof", &["-q"], &cmd, 0);
        let report = report_json(&prof);
        let loop_lines = [line_of(GIL, "for i in range"), line_of(GIL, "# the loop")];
        let run = if minor >= 11 { "Worker.run" } else { "run" };
        let hot = report["hot"].as_array().expect("hot stacks");
        let spun = hot.iter().find(|h| {
            let fs = frames(h);
            fs.windows(2).any(|w| {
                w[0].0 == "spin"
                    && w[0].1.is_some_and(|l| loop_lines.contains(&l))
                    && w[1].0 == run
                    && w[1].1 == Some(line_of(GIL, "spin(1_500_000)"))
            })
        });
        let spun = spun.unwrap_or_else(|| {
            panic!("3.{minor}: no hot stack in spin's loop under {run}: {hot:#?}")
        });
        let user = spun["user_frame"].as_str().unwrap_or("");
        assert!(
            user.starts_with("spin (") && user.contains("gil.py:"),
            "3.{minor}: {spun:#}"
        );
        // The interpreter's own machinery between the Python frames is gone.
        let fs = frames(spun);
        let at = fs.iter().position(|f| f.0 == "spin").unwrap();
        assert!(
            !fs[at..]
                .iter()
                .any(|f| f.0.starts_with("_PyEval_EvalFrameDefault")),
            "3.{minor}: {fs:?}"
        );
        // The thread waiting for the GIL (off the CPU, seen by the sampler's look from outside)
        // waits in spin too, under run (a blocked thread's stack is scanned, not unwound: stale
        // words may sit between them).
        let off = std::process::Command::new(common::stallscope())
            .args(["export", "--format", "collapsed", "--weight", "off-cpu"])
            .arg(&prof)
            .output()
            .expect("export");
        let off = String::from_utf8_lossy(&off.stdout);
        assert!(
            off.lines().any(|l| {
                let under = l.find(&format!(";{run};"));
                under.is_some_and(|at| l[at..].contains(";spin;"))
            }),
            "3.{minor}: no off-CPU stack in spin under {run}:\n{off}"
        );
    }
}

const TWO_LOOPS: &str = r#"import threading

def alpha(n):
    total = 0
    for i in range(n):
        total += i * i  # alpha's loop
    return total

def beta(n):
    total = 0
    for i in range(n):
        total += i ^ 3  # beta's loop
    return total

ts = [threading.Thread(target=alpha, args=(6_000_000,)),
      threading.Thread(target=beta, args=(6_000_000,))]
for t in ts: t.start()
for t in ts: t.join()
"#;

/// Two pure-Python threads on the GIL, one running `alpha` and one `beta`: the taking-turns
/// finding names CPython's GIL by its words (no symbol and offset in its title), its evidence
/// names both functions with their shares, file and line, and the thread table shows
/// `MainThread` whole.
#[test]
fn threads_taking_turns_on_the_gil_name_each_function_they_ran() {
    let Some(python) = interpreter(11) else {
        return;
    };
    let _machine = common::machine();
    let dir = TempDir::new("py-two-loops");
    let script = dir.join("loops.py");
    std::fs::write(&script, TWO_LOOPS).unwrap();
    let cmd = [python.as_str(), script.to_str().unwrap()];
    let (_, prof) = profile(dir.path(), "loops.prof", &["-q"], &cmd, 0);
    let report = report_json(&prof);
    let findings = report["findings"].as_array().expect("findings");
    let Some(turns) = findings.iter().find(|f| f["id"] == "taking-turns") else {
        // Behind other processes' load the threads' turns blur with their waits for a CPU.
        if let Some(why) = common::starved(&report, 0.3) {
            common::skipped(
                "threads_taking_turns_on_the_gil_name_each_function_they_ran",
                &why,
            );
            return;
        }
        panic!("no taking-turns finding: {findings:#?}");
    };
    let title = turns["title"].as_str().unwrap();
    assert!(
        title.contains("CPython's GIL") && !title.contains("_PyRuntime"),
        "{title}"
    );
    let evidence = turns["evidence"].to_string();
    for (function, marker) in [("alpha", "# alpha's loop"), ("beta", "# beta's loop")] {
        let at = format!("{function} (");
        // Its heaviest line: the loop's body or its `for`.
        let body = line_of(TWO_LOOPS, marker);
        let lines = [
            format!("loops.py:{body})"),
            format!("loops.py:{})", body - 1),
        ];
        let named = evidence.split(", ").any(|part| {
            part.contains(&at)
                && lines.iter().any(|l| part.contains(l))
                && part.trim_end_matches(['"', ']']).ends_with('%')
        });
        assert!(named, "{function} at {lines:?} with its share: {evidence}");
    }
    let text = std::process::Command::new(common::stallscope())
        .arg("report")
        .arg(&prof)
        .output()
        .expect("report");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("MainThread [")),
        "{text}"
    );
}

const HASHING: &str = r#"import hashlib, threading

DATA = bytes(range(256)) * 65536

def hasher():
    for _ in range(12):
        hashlib.sha256(DATA).digest()  # hashing

ts = [threading.Thread(target=hasher) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
"#;

/// Threads hashing 16 MiB blocks (hashlib releases the GIL around the hash): no finding names the
/// GIL, and the samples in the C library name the Python line that called it as the user frame.
#[test]
fn a_c_library_that_releases_the_gil_names_its_python_caller() {
    for minor in [11, 13, 8] {
        let Some(python) = interpreter(minor) else {
            continue;
        };
        let dir = TempDir::new(&format!("py-hash-{minor}"));
        let script = dir.join("hash.py");
        std::fs::write(&script, HASHING).unwrap();
        let cmd = [python.as_str(), script.to_str().unwrap()];
        let (_, prof) = profile(dir.path(), "hash.prof", &["-q"], &cmd, 0);
        let report = report_json(&prof);
        let findings = report["findings"].to_string();
        assert!(!findings.contains("GIL"), "3.{minor}: {findings}");
        let want = "hasher (";
        let line = format!("hash.py:{})", line_of(HASHING, "# hashing"));
        let hot = report["hot"].as_array().expect("hot stacks");
        let native_under_python = hot.iter().find(|h| {
            let fs = frames(h);
            let user = h["user_frame"].as_str().unwrap_or("");
            user.starts_with(want)
                && user.ends_with(&line)
                && fs.first().is_some_and(|f| f.0 != "hasher")
        });
        assert!(
            native_under_python.is_some(),
            "3.{minor}: no hot stack in native code with hasher's line as its user frame: {hot:#?}"
        );
    }
}

const LOCK_LIB: &str = r#"#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;
void locked_work(int n) {
    for (int k = 0; k < n; k++) {
        pthread_mutex_lock(&m);
        for (unsigned long i = 0; i < 200000; i++) sink += i;
        pthread_mutex_unlock(&m);
    }
}
"#;

const LOCKING: &str = r#"import ctypes, sys, threading

lib = ctypes.CDLL(sys.argv[1])

def caller():
    lib.locked_work(400)  # the native lock

ts = [threading.Thread(target=caller) for _ in range(3)]
for t in ts: t.start()
for t in ts: t.join()
"#;

/// Python threads contending on a mutex inside a C library (called through ctypes, which
/// releases the GIL): the lock's waiting sites name the Python line that called the library.
#[test]
fn a_native_lock_names_its_python_caller() {
    for minor in [11, 13, 8] {
        let Some(python) = interpreter(minor) else {
            continue;
        };
        let dir = TempDir::new(&format!("py-lock-{minor}"));
        let lib = dir.join("liblocked.so");
        let src = dir.join("locked.c");
        std::fs::write(&src, LOCK_LIB).unwrap();
        let cc = std::process::Command::new("cc")
            .args(["-O1", "-g", "-shared", "-fPIC", "-pthread", "-o"])
            .arg(&lib)
            .arg(&src)
            .status()
            .expect("cc");
        assert!(cc.success());
        let script = dir.join("lock.py");
        std::fs::write(&script, LOCKING).unwrap();
        let cmd = [
            python.as_str(),
            script.to_str().unwrap(),
            lib.to_str().unwrap(),
        ];
        let (_, prof) = profile(dir.path(), "lock.prof", &["-q"], &cmd, 0);
        let report = report_json(&prof);
        let line = line_of(LOCKING, "# the native lock");
        let locks = report["locks"].as_array().expect("locks");
        let named = locks.iter().any(|l| {
            l["contended"].as_u64().unwrap_or(0) > 0
                && l["sites"].as_array().is_some_and(|sites| {
                    sites.iter().any(|s| {
                        // A site's user frame is the index of its frame.
                        let fs = frames(s);
                        let user = s["user_frame"].as_u64().and_then(|i| fs.get(i as usize));
                        user == Some(&("caller".to_string(), Some(line)))
                            && fs.iter().any(|f| f.0 == "locked_work")
                    })
                })
        });
        assert!(
            named,
            "3.{minor}: no contended lock whose waiter names caller's line: {locks:#?}"
        );
    }
}

const NAMED: &str = r#"import threading
from concurrent.futures import ThreadPoolExecutor

done = threading.Event()

def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

def fetch():
    spin(200_000)
    done.wait()  # alive until the pool's work is done

fetchers = [threading.Thread(target=fetch, name="fetcher-%d" % i) for i in (1, 2)]
for t in fetchers: t.start()
with ThreadPoolExecutor(max_workers=2, thread_name_prefix="pool") as pool:
    list(pool.map(spin, [400_000] * 6))
done.set()
for t in fetchers: t.join()
"#;

/// Threads named in Python (`threading.Thread(name=...)`, a ThreadPoolExecutor's workers,
/// `pool_0` and `pool_1` with `thread_name_prefix="pool"`) carry those names in the report, where
/// the kernel knows them only by the process's name; the main thread is `MainThread`. Each
/// version keeps a Thread's attributes its own way (a `__dict__` in 3.8-3.10, values beside the
/// object in 3.11 and 3.12, inline in 3.13).
#[test]
fn threads_carry_the_names_python_gives_them() {
    for minor in [8, 9, 10, 11, 12, 13] {
        let Some(python) = interpreter(minor) else {
            continue;
        };
        let dir = TempDir::new(&format!("py-names-{minor}"));
        let script = dir.join("named.py");
        std::fs::write(&script, NAMED).unwrap();
        let cmd = [python.as_str(), script.to_str().unwrap()];
        let (_, prof) = profile(dir.path(), "named.prof", &["-q"], &cmd, 0);
        let report = report_json(&prof);
        let names: Vec<&str> = report["threads"]
            .as_array()
            .expect("threads")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for want in ["MainThread", "fetcher-1", "fetcher-2", "pool_0", "pool_1"] {
            assert!(
                names.contains(&want),
                "3.{minor}: no thread {want}: {names:?}"
            );
        }
        // The exports name them too.
        let speedscope = std::process::Command::new(common::stallscope())
            .args(["export", "--format", "speedscope"])
            .arg(&prof)
            .output()
            .expect("export");
        let speedscope = String::from_utf8_lossy(&speedscope.stdout);
        assert!(
            speedscope.contains("fetcher-1") && speedscope.contains("pool_0"),
            "3.{minor}"
        );
    }
}
