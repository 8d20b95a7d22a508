//! Names of glibc's locks without libc's debug file (issue 25, item 5), as most users of Ubuntu
//! or Fedora run: `report` runs in a mount namespace with an empty tmpfs over /usr/lib/debug.
//! random()'s lock is named by the function that waits (random is exported); the timezone lock,
//! whose functions are all static, is one finding (not one per unnamed function) that says which
//! package would name it; a FILE's lock is named by the stdio function either way.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Four threads released together by a barrier call random(), localtime_r() or fprintf() to one
/// FILE in a loop: each takes a lock of glibc's that the others hold.
const PROGRAM: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static pthread_barrier_t start;
static FILE *shared;
static void *by_random(void *a) {
    pthread_barrier_wait(&start);
    long s = 0;
    for (int i = 0; i < 3000000; i++) s += random();
    return a;
}
static void *by_localtime(void *a) {
    pthread_barrier_wait(&start);
    struct tm tm;
    time_t t = 0;
    for (int i = 0; i < 1000000; i++) localtime_r(&t, &tm);
    return a;
}
static void *by_fprintf(void *a) {
    pthread_barrier_wait(&start);
    for (int i = 0; i < 400000; i++) fprintf(shared, "line %d %s\n", i, "abcdefghijklmnopqrstuvwxyz");
    return a;
}
int main(int argc, char **argv) {
    void *(*fn)(void *) = argv[1][0] == 'r' ? by_random : argv[1][0] == 'l' ? by_localtime : by_fprintf;
    shared = fopen("/dev/null", "w");
    pthread_t t[4];
    pthread_barrier_init(&start, 0, 4);
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, fn, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    puts("done");
    return 0;
}
"#;

/// `stallscope report --json PROFILE`, with /usr/lib/debug hidden when `hide_debug`.
fn report(profile: &Path, hide_debug: bool) -> Value {
    let out = if hide_debug {
        let script = format!(
            "mount -t tmpfs none /usr/lib/debug && exec {} report --json {}",
            stallscope(),
            profile.display()
        );
        Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .output()
            .unwrap()
    } else {
        Command::new(stallscope())
            .args(["report", "--json"])
            .arg(profile)
            .output()
            .unwrap()
    };
    assert!(out.status.success(), "{}", describe(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn lock_findings(report: &Value) -> Vec<&Value> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "glibc-lock-contention")
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

#[test]
fn glibc_locks_are_named_or_explained_without_the_debug_file() {
    if !have(
        "a mount namespace (unshare -m as root) and /usr/lib/debug",
        Path::new("/usr/lib/debug").is_dir()
            && Command::new("unshare")
                .args(["-m", "sh", "-c", "mount -t tmpfs none /usr/lib/debug"])
                .status()
                .is_ok_and(|s| s.success()),
        "run as root; apt-get install util-linux libc6-dbg",
    ) {
        return;
    }
    let dir = TempDir::new("names-no-debug");
    let src = dir.join("glibc_locks.c");
    std::fs::write(&src, PROGRAM).unwrap();
    let exe = compile_file(dir.path(), &src, &["-g"]);
    for (which, named) in [
        ("random", Some("random()'s lock")),
        ("localtime", None),
        ("fprintf", Some("the lock of a FILE")),
    ] {
        let (_, profile) = profile(
            dir.path(),
            &format!("{which}.prof"),
            &["-q"],
            &[exe.to_str().unwrap(), which],
            0,
        );
        let with = report(&profile, false);
        let without = report(&profile, true);
        let found = lock_findings(&without);
        if found.is_empty()
            && let Some(why) = starved(&without, 0.15)
        {
            eprintln!("SKIPPED ({which}): {why}");
            println!("SKIPPED ({which}): {why}");
            continue;
        }
        assert_eq!(
            found.len(),
            1,
            "{which}: one finding for one lock, without the debug file: {found:#?}"
        );
        let t = text(found[0]);
        match named {
            Some(words) => assert!(t.contains(words), "{which}: {t}"),
            None => {
                assert!(
                    t.contains("libc6-dbg") && t.contains("DEBUGINFOD_URLS"),
                    "{which}: the report says what would name it: {t}"
                );
            }
        }
        // With the debug file (CI has libc6-dbg), every one is named.
        if Path::new("/usr/lib/debug/.build-id").is_dir() {
            let named_with = lock_findings(&with);
            assert!(
                named_with
                    .iter()
                    .all(|f| !text(f).contains("the lock is unnamed")),
                "{which}: {named_with:#?}"
            );
        }
    }
}
