//! Programs started through their loader: `stallscope run --
//! /lib64/ld-linux-x86-64.so.2 [--library-path DIR] ./prog` is profiled like any other, with the
//! program's own executable as the main module (its /proc/self/exe is the loader); and when the
//! interposer's unwinder (libgcc_s.so.1) cannot be found at all, the profile and the report say
//! so loudly instead of silently losing every stack.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// Allocates 200,000 blocks from one named function: allocation stacks (one call in 1,024 by
/// default) are certain to name it.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) void *make_item(int i) { return malloc(32 + (size_t)(i % 64)); }
int main(void) {
    static void *keep[1000];
    long sum = 0;
    for (int r = 0; r < 200; r++) {
        for (int i = 0; i < 1000; i++) keep[i] = make_item(i);
        for (int i = 0; i < 1000; i++) {
            sum += ((char *)keep[i])[0] = 1;
            free(keep[i]);
        }
    }
    printf("%ld\n", sum);
    return 0;
}
"#;

fn program(dir: &Path) -> PathBuf {
    let src = dir.join("make_items.c");
    std::fs::write(&src, PROGRAM).unwrap();
    compile_file(dir, &src, &["-g"])
}

/// Whether an allocation site of the report names `function` in the module `module`.
fn site_names(report: &serde_json::Value, function: &str, module: &Path) -> bool {
    report["alloc"]["sites"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["frames"].as_array().into_iter().flatten())
        .any(|f| {
            f["function"] == function && Path::new(f["module"].as_str().unwrap_or("")) == module
        })
}

#[test]
fn a_program_started_through_its_loader_is_profiled_as_itself() {
    if !have_file(&[LOADER], "libc6") {
        return;
    }
    let dir = TempDir::new("loader");
    let exe = program(dir.path());
    let exe_str = exe.to_str().unwrap();
    let plain = plain_run(dir.path(), &[exe_str], |_| {});
    let libdir = "/lib/x86_64-linux-gnu";
    let ways: [(&str, Vec<&str>); 3] = [
        ("direct.prof", vec![exe_str]),
        ("loader.prof", vec![LOADER, exe_str]),
        (
            "library-path.prof",
            vec![LOADER, "--library-path", libdir, exe_str],
        ),
    ];
    for (name, cmd) in ways {
        let (out, profile) = profile(dir.path(), name, &[], &cmd, 0);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&plain.stdout),
            "{name}: the same output\n{}",
            describe(&out)
        );
        let report = report_json(&profile);
        assert_eq!(
            Path::new(report["exe"].as_str().unwrap()),
            exe,
            "{name}: the main program is the program, not its loader"
        );
        assert_eq!(command_of(&report), cmd, "{name}: the command as given");
        assert!(
            site_names(&report, "make_item", &exe),
            "{name}: the program's own function names its allocation site: {}",
            report["alloc"]["sites"]
        );
    }
}

/// Runs `stallscope run -o PROFILE -- PROGRAM` in a mount namespace where the system's
/// libgcc_s.so.1 is /dev/null: stallscope itself starts through the loader with a private copy,
/// the program (a C program, which needs none) finds none anywhere. The interposer's own unwinder
/// needs no libgcc: the stacks are there (a C program is never given libgcc). With it turned off
/// (`STALLSCOPE_FAST_UNWIND=0`, libgcc's unwinder for every stack) there is no unwinder at all,
/// and the profile and the report say so.
#[test]
fn without_libgcc_the_own_unwinder_takes_the_stacks_and_without_any_the_report_says_so() {
    let dir = TempDir::new("no-unwinder");
    let exe = program(dir.path());
    let system_gcc = Path::new("/usr/lib/x86_64-linux-gnu/libgcc_s.so.1");
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!("mount --bind /dev/null {}", system_gcc.display()))
        .output();
    if !have(
        "a mount namespace (unshare -m as root) and the system's libgcc_s.so.1",
        probe.is_ok_and(|o| o.status.success()) && system_gcc.exists(),
        "run as root; apt-get install util-linux libgcc-s1",
    ) {
        return;
    }
    let private = dir.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::copy(system_gcc, private.join("libgcc_s.so.1")).unwrap();
    let run_without_libgcc = |name: &str, fast: &str| {
        let profile = dir.join(name);
        let script = format!(
            "mount --bind /dev/null {gcc} && STALLSCOPE_FAST_UNWIND={fast} exec {LOADER} --library-path {private} {stallscope} run -o {profile} -- {exe}",
            gcc = system_gcc.display(),
            private = private.display(),
            stallscope = stallscope(),
            profile = profile.display(),
            exe = exe.display(),
        );
        let mut c = Command::new("unshare");
        c.args(["-m", "sh", "-c", &script]).current_dir(dir.path());
        let out = output_within(c, RUN_TIMEOUT);
        assert_eq!(exit_code(&out), 0, "{}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "200000\n");
        (profile, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (profile, stderr) = run_without_libgcc("bare.prof", "0");
    assert!(stderr.contains("stacks:       NONE"), "{stderr}");
    let report = report_json(&profile);
    assert_eq!(report["no_unwinder"], true, "the profile says so");
    assert!(
        !site_names(&report, "make_item", &exe),
        "no stacks without an unwinder"
    );
    let text = Command::new(stallscope())
        .arg("report")
        .arg(&profile)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("NO STACKS"),
        "the report says so"
    );
    // The interposer's own unwinder, libgcc still nowhere: stacks, and no such note.
    let (own, stderr) = run_without_libgcc("own.prof", "1");
    assert!(!stderr.contains("NONE"), "{stderr}");
    let report = report_json(&own);
    assert!(report.get("no_unwinder").is_none());
    assert!(
        site_names(&report, "make_item", &exe),
        "{}",
        report["alloc"]["sites"]
    );
    // The same run with libgcc_s where it belongs has stacks and no such note.
    let (_, normal) = common::profile(dir.path(), "normal.prof", &[], &[exe.to_str().unwrap()], 0);
    let report = report_json(&normal);
    assert!(report.get("no_unwinder").is_none());
    assert!(site_names(&report, "make_item", &exe));
}

/// A listing without its load addresses (they move from run to run).
fn without_addresses(listing: &[u8]) -> String {
    String::from_utf8_lossy(listing)
        .lines()
        .map(|l| l.split(" (0x").next().unwrap_or(l).to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The loader asked to list a program's libraries (`ld-linux-x86-64.so.2 --list`, which is what
/// `ldd` runs) runs no program: its listing is the one it gives without stallscope (our library
/// is not among the program's), with a one-line note and no profile. `ldd` itself, a shell script
/// that is profiled, starts the loader with LD_TRACE_LOADED_OBJECTS set: that exec is not given
/// our library either, so scripts that read ldd's output (to bundle a program's libraries) read
/// the same.
#[test]
fn listing_a_programs_libraries_lists_what_it_would_without_stallscope() {
    if !have_file(&[LOADER], "libc6") {
        return;
    }
    let dir = TempDir::new("loader-list");
    let exe = program(dir.path());
    let exe_str = exe.to_str().unwrap();
    let ways: [(&str, Vec<&str>); 3] = [
        ("list.prof", vec![LOADER, "--list", exe_str]),
        (
            "list-path.prof",
            vec![
                LOADER,
                "--library-path",
                "/lib/x86_64-linux-gnu",
                "--list",
                exe_str,
            ],
        ),
        ("verify.prof", vec![LOADER, "--verify", exe_str]),
    ];
    for (name, cmd) in ways {
        let plain = plain_run(dir.path(), &cmd, |_| {});
        let out_path = dir.join(name);
        let profiled = stallscope_run(dir.path(), &["-o", out_path.to_str().unwrap()], &cmd);
        assert_eq!(
            exit_code(&profiled),
            exit_code(&plain),
            "{name}: {}",
            describe(&profiled)
        );
        assert_eq!(
            without_addresses(&profiled.stdout),
            without_addresses(&plain.stdout),
            "{name}: the same listing"
        );
        assert!(
            !String::from_utf8_lossy(&profiled.stdout).contains("libstallscope"),
            "{name}"
        );
        let stderr = String::from_utf8_lossy(&profiled.stderr);
        assert_eq!(stderr.lines().count(), 1, "{name}: one note: {stderr}");
        assert!(stderr.contains("runs no program"), "{name}: {stderr}");
        assert!(!out_path.exists(), "{name}: no profile");
    }
    // ldd (a bash script: profiled) and its child, the loader in tracing mode (not).
    if !have_file(&["/usr/bin/ldd"], "libc-bin") {
        return;
    }
    let cmd = ["/usr/bin/ldd", exe_str];
    let plain = plain_run(dir.path(), &cmd, |_| {});
    let (profiled, profile) = common::profile(dir.path(), "ldd.prof", &["-q"], &cmd, 0);
    assert_eq!(
        without_addresses(&profiled.stdout),
        without_addresses(&plain.stdout),
        "ldd lists what it lists without stallscope\n{}",
        describe(&profiled)
    );
    let report = report_json(&profile);
    assert!(
        command_of(&report).iter().any(|a| a.ends_with("/ldd")),
        "the profile is ldd's (bash running it): {:?}",
        command_of(&report)
    );
}
