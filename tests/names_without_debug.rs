//! Names of glibc's locks with and without libc's debug file, as most users of
//! Ubuntu or Fedora run: `report` runs in a mount namespace with an empty tmpfs over
//! /usr/lib/debug, and again with the debug file served by a local debuginfod server
//! (DEBUGINFOD_URLS). random()'s lock and the timezone lock are named from libc's code (the
//! exported function that takes them), main_arena from libc's data (it points back at itself),
//! a FILE's lock by the stdio function: one finding for one lock, the same words each way; the
//! report says which package names what is still unnamed, only when something is.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Four threads released together by a barrier call random(), localtime_r() or fprintf() to one
/// FILE in a loop: each takes a lock of glibc's that the others hold.
const PROGRAM: &str = r#"
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static pthread_barrier_t start;
static FILE *shared;
static void *by_random(void *a) {
    pthread_barrier_wait(&start);
    long s = 0;
    for (int i = 0; i < 6000000; i++) s += random();
    return a;
}
static void *by_localtime(void *a) {
    pthread_barrier_wait(&start);
    struct tm tm;
    time_t t = 0;
    for (int i = 0; i < 2000000; i++) localtime_r(&t, &tm);
    return a;
}
static void *by_fprintf(void *a) {
    pthread_barrier_wait(&start);
    for (int i = 0; i < 400000; i++) fprintf(shared, "line %d %s\n", i, "abcdefghijklmnopqrstuvwxyz");
    return a;
}
/* Blocks of 1-4 KiB are above the tcache's limit: with one arena every malloc and free takes
   main_arena's lock. */
static void *by_malloc(void *a) {
    pthread_barrier_wait(&start);
    void *live[64] = {0};
    unsigned long s = (unsigned long)&live;
    for (int i = 0; i < 3000000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        free(live[s % 64]);
        live[s % 64] = malloc(1024 + (s >> 8) % 3072);
    }
    for (int i = 0; i < 64; i++) free(live[i]);
    return a;
}
int main(int argc, char **argv) {
    char w = argv[1][0];
    void *(*fn)(void *) = w == 'r' ? by_random : w == 'l' ? by_localtime : w == 'm' ? by_malloc : by_fprintf;
    if (w == 'm') mallopt(M_ARENA_MAX, 1);
    shared = fopen("/dev/null", "w");
    pthread_t t[4];
    pthread_barrier_init(&start, 0, 4);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, fn, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    puts("done");
    return 0;
}
"#;

/// How `report` finds libc's debug file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Debug<'a> {
    /// Under /usr/lib/debug (libc6-dbg).
    Installed,
    /// Nowhere: an empty tmpfs over /usr/lib/debug.
    Hidden,
    /// Hidden, and served by a debuginfod server at this URL, into this cache.
    Debuginfod(&'a str, &'a Path),
}

/// `stallscope report --json PROFILE`, finding libc's debug file as `debug` says.
fn report(profile: &Path, debug: Debug) -> Value {
    let mut cmd = if debug == Debug::Installed {
        let mut c = Command::new(stallscope());
        c.args(["report", "--json"]).arg(profile);
        c
    } else {
        let script = format!(
            "mount -t tmpfs none /usr/lib/debug && exec {} report --json {}",
            stallscope(),
            profile.display()
        );
        let mut c = Command::new("unshare");
        c.args(["-m", "sh", "-c", &script]);
        c
    };
    cmd.env_remove("DEBUGINFOD_URLS");
    if let Debug::Debuginfod(url, cache) = debug {
        cmd.env("DEBUGINFOD_URLS", url)
            .env("DEBUGINFOD_CACHE_PATH", cache);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{debug:?}: {}", describe(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn lock_findings(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "glibc-lock-contention" || f["id"] == "arena-lock")
        .collect()
}

fn text(f: &Value) -> String {
    let mut s = f["title"].as_str().unwrap_or_default().to_string();
    for e in f["evidence"].as_array().into_iter().flatten() {
        s.push('\n');
        s.push_str(e.as_str().unwrap_or_default());
    }
    s
}

/// A local debuginfod server serving a copy of libc's debug file, stopped when dropped.
struct Server {
    child: std::process::Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The build id of the system's libc, in hex.
fn libc_build_id() -> Option<String> {
    use object::Object;
    let data = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").ok()?;
    let id = object::File::parse(&*data).ok()?.build_id().ok()??.to_vec();
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `url` answers 200 to an HTTP/1.0 GET.
fn answers(host_port: &str, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(host_port) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    if write!(s, "GET {path} HTTP/1.0\r\nHost: {host_port}\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}

/// `debuginfod` serving libc's debug file (copied from /usr/lib/debug, which `report` will not
/// see), once it answers for it; None (with a message) without debuginfod.
fn debuginfod(dir: &Path) -> Option<Server> {
    if !have_tool("debuginfod", &["--version"], "debuginfod") {
        return None;
    }
    let id = libc_build_id()?;
    let files = dir.join("served");
    std::fs::create_dir_all(&files).unwrap();
    let local = format!("/usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    std::fs::copy(&local, files.join("libc.debug")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("debuginfod")
        .args(["-p", &port.to_string(), "-F", "-d"])
        .arg(dir.join("debuginfod.sqlite"))
        .arg(&files)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let host_port = format!("127.0.0.1:{port}");
    let path = format!("/buildid/{id}/debuginfo");
    for _ in 0..120 {
        if answers(&host_port, &path) {
            return Some(server);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    panic!("debuginfod on port {port} did not serve {local} within 30 s");
}

#[test]
fn glibc_locks_are_named_with_and_without_the_debug_file() {
    if !have(
        "a mount namespace (unshare -m as root) and libc's debug file under /usr/lib/debug",
        libc_build_id().is_some_and(|id| {
            Path::new(&format!(
                "/usr/lib/debug/.build-id/{}/{}.debug",
                &id[..2],
                &id[2..]
            ))
            .is_file()
        }) && Command::new("unshare")
            .args(["-m", "sh", "-c", "mount -t tmpfs none /usr/lib/debug"])
            .status()
            .is_ok_and(|s| s.success()),
        "run as root; apt-get install util-linux libc6-dbg",
    ) {
        return;
    }
    let _machine = machine();
    let dir = TempDir::new("names-no-debug");
    let src = dir.join("glibc_locks.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = compile_file(dir.path(), &src, &["-g"]);
    let server = debuginfod(dir.path());
    let cache = dir.join("debuginfod-cache");
    for (which, words) in [
        ("random", "random()'s lock"),
        ("localtime", "the timezone lock (tzset_lock)"),
        ("fprintf", "the lock of a FILE"),
        ("malloc", "malloc's arena lock (main_arena)"),
    ] {
        let (_, profile) = profile(
            dir.path(),
            &format!("{which}.prof"),
            &["-q"],
            &[exe.to_str().unwrap(), which],
            0,
        );
        let mut ways = vec![Debug::Installed, Debug::Hidden];
        if let Some(s) = &server {
            ways.push(Debug::Debuginfod(&s.url, &cache));
        }
        for debug in ways {
            let r = report(&profile, debug);
            let found = lock_findings(&r);
            if found.is_empty()
                && let Some(why) = starved(&r, 0.15)
            {
                eprintln!("SKIPPED ({which}, {debug:?}): {why}");
                println!("SKIPPED ({which}, {debug:?}): {why}");
                break;
            }
            assert_eq!(
                found.len(),
                1,
                "{which}, {debug:?}: one finding for one lock: {found:#?}"
            );
            let t = text(found[0]);
            assert!(t.contains(words), "{which}, {debug:?}: {t}");
            assert!(!t.contains("the lock at 0x"), "{which}, {debug:?}: {t}");
            assert!(!t.contains("a thread's arena"), "{which}, {debug:?}: {t}");
            // Every lock-wait site that caught its lock word caught this one.
            let named: Vec<&str> = r["threads"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|t| t["state_sites"]["lock"].as_array().into_iter().flatten())
                .filter_map(|s| s["locks"][0]["name"].as_str())
                .collect();
            assert!(
                named.iter().all(|n| n.starts_with(words)),
                "{which}, {debug:?}: {named:?}"
            );
            // The hint, only where something is left unnamed: the timezone lock's static
            // functions without the debug file.
            let hint = r["names_hint"].as_str();
            match debug {
                Debug::Hidden if which == "localtime" => {
                    let hint = hint.expect("names_hint without the debug file");
                    assert!(
                        hint.contains("DEBUGINFOD_URLS")
                            && (hint.contains("libc6-dbg") || hint.contains("debuginfo")),
                        "{hint}"
                    );
                }
                Debug::Hidden => {}
                _ => assert_eq!(hint, None, "{which}, {debug:?}"),
            }
            // The debug file from debuginfod names the function too, as libc6-dbg does.
            if let Debug::Debuginfod(..) = debug
                && which == "localtime"
            {
                assert!(t.contains("tz_convert"), "{t}");
            }
        }
    }
}
