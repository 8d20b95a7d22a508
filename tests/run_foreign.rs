//! Never harms, on what else users run: a program whose loader is not glibc's (musl)
//! runs exactly as without stallscope, unprofiled, with a note, whether it is the command itself
//! or a child started by exec, posix_spawn or posix_spawnp; and the launched process's profile is
//! at the `-o` path whatever the program does with its environment (`env -i`, `clearenv()` then
//! exec, an empty envp).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A musl program (dynamically linked: its interpreter is /lib/ld-musl-x86_64.so.1) that starts
/// a thread, allocates, prints whether LD_PRELOAD reached it, and exits with 3.
const MUSL_PROGRAM: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static void *work(void *a) { (void)a; return malloc(100); }
int main(int argc, char **argv) {
    pthread_t t;
    void *r;
    pthread_create(&t, 0, work, 0);
    pthread_join(t, &r);
    free(r);
    const char *p = getenv("LD_PRELOAD");
    printf("musl %s: LD_PRELOAD=%s\n", argc > 1 ? argv[1] : "-", p ? p : "(unset)");
    return 3;
}
"#;

/// A glibc program that starts PROGRAM (a path) in each way the interposer hooks: posix_spawn,
/// posix_spawnp (by name, along PATH), vfork + execv, fork + execvp (by name), execveat by a
/// directory descriptor, fexecve and execveat (AT_EMPTY_PATH) of an O_PATH descriptor (which
/// cannot be read), and prints each child's status.
const SPAWNER: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static void report(const char *how, pid_t pid) {
    int st = 0;
    waitpid(pid, &st, 0);
    printf("%s: exit %d\n", how, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    fflush(stdout);
}
int main(int argc, char **argv) {
    const char *path = argv[1], *name = strrchr(argv[1], '/') + 1;
    pid_t pid;
    fflush(stdout);
    char *a1[] = {(char *)name, "posix_spawn", 0};
    if (posix_spawn(&pid, path, 0, 0, a1, environ) == 0) report("posix_spawn", pid);
    char *a2[] = {(char *)name, "posix_spawnp", 0};
    if (posix_spawnp(&pid, name, 0, 0, a2, environ) == 0) report("posix_spawnp", pid);
    char *a3[] = {(char *)name, "vfork", 0};
    pid = vfork();
    if (pid == 0) { execv(path, a3); _exit(127); }
    report("vfork", pid);
    char *a4[] = {(char *)name, "fork", 0};
    pid = fork();
    if (pid == 0) { execvp(name, a4); _exit(127); }
    report("fork", pid);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(name - path), path);
    char *a5[] = {(char *)name, "execveat", 0};
    pid = fork();
    if (pid == 0) { execveat(open(dir, O_RDONLY | O_DIRECTORY), name, a5, environ, 0); _exit(127); }
    report("execveat", pid);
    char *a6[] = {(char *)name, "fexecve", 0};
    pid = fork();
    if (pid == 0) { fexecve(open(path, O_PATH | O_CLOEXEC), a6, environ); _exit(127); }
    report("fexecve", pid);
    char *a7[] = {(char *)name, "execveat-fd", 0};
    pid = fork();
    if (pid == 0) { execveat(open(path, O_PATH | O_CLOEXEC), "", a7, environ, AT_EMPTY_PATH); _exit(127); }
    report("execveat-fd", pid);
    return 0;
}
"#;

fn musl_program(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("musl_prog.c");
    std::fs::write(&src, MUSL_PROGRAM).unwrap();
    let exe = try_compile(
        "musl-gcc",
        dir,
        &src,
        "musl_prog",
        &["-pthread"],
        "musl-tools",
    )?;
    let interp = std::fs::read(&exe).unwrap();
    assert!(
        interp.windows(b"ld-musl".len()).any(|w| w == b"ld-musl"),
        "musl-gcc built a dynamically linked program with musl's loader"
    );
    Some(exe)
}

#[test]
fn a_musl_program_runs_unprofiled_with_a_note() {
    let dir = TempDir::new("foreign-cmd");
    let Some(exe) = musl_program(dir.path()) else {
        return;
    };
    let cmd = [exe.to_str().unwrap(), "direct"];
    let plain = plain_run(dir.path(), &cmd, |_| {});
    assert_eq!(exit_code(&plain), 3, "{}", describe(&plain));
    let out_path = dir.join("musl.prof");
    let profiled = stallscope_run(dir.path(), &["-o", out_path.to_str().unwrap()], &cmd);
    assert_eq!(exit_code(&profiled), 3, "{}", describe(&profiled));
    assert_eq!(
        String::from_utf8_lossy(&profiled.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "same output, LD_PRELOAD untouched"
    );
    let stderr = String::from_utf8_lossy(&profiled.stderr);
    assert_eq!(
        stderr.lines().count(),
        1,
        "one line of note, nothing else: {stderr}"
    );
    assert!(
        stderr.contains("runs unprofiled") && stderr.contains("ld-musl"),
        "{stderr}"
    );
    assert!(!out_path.exists(), "no profile of a program not profiled");
}

#[test]
fn a_musl_child_runs_unprofiled_however_it_is_started() {
    let dir = TempDir::new("foreign-child");
    let Some(exe) = musl_program(dir.path()) else {
        return;
    };
    let src = dir.join("spawner.c");
    std::fs::write(&src, SPAWNER).unwrap();
    let spawner = compile_file(dir.path(), &src, &[]);
    let path_var = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let cmd = [spawner.to_str().unwrap(), exe.to_str().unwrap()];
    let plain = plain_run(dir.path(), &cmd, |c| {
        c.env("PATH", &path_var);
    });
    let expected = String::from_utf8_lossy(&plain.stdout).into_owned();
    for how in [
        "posix_spawn",
        "posix_spawnp",
        "vfork",
        "fork",
        "execveat",
        "fexecve",
        "execveat-fd",
    ] {
        assert!(
            expected.contains(&format!("{how}: exit 3"))
                && expected.contains(&format!("musl {how}: LD_PRELOAD=(unset)")),
            "the plain run: {expected}"
        );
    }
    let (out, profile) = profile_with(dir.path(), "spawner.prof", &[], &cmd, 0, |c| {
        c.env("PATH", &path_var);
    });
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "each musl child ran as without stallscope\n{}",
        describe(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note: ")
            && stderr.contains("ran unprofiled")
            && stderr.contains("ld-musl"),
        "the run says which program ran unprofiled: {stderr}"
    );
    assert!(
        !stderr.contains("Error loading") && !stderr.contains("relocating"),
        "{stderr}"
    );
    // The spawner itself is profiled as usual.
    let report = report_json(&profile);
    assert!(
        command_of(&report)[0].ends_with("spawner"),
        "{:?}",
        command_of(&report)
    );
}

#[test]
fn a_user_preload_stays_for_a_musl_child() {
    let dir = TempDir::new("foreign-user-preload");
    let Some(exe) = musl_program(dir.path()) else {
        return;
    };
    let src = dir.join("empty.c");
    std::fs::write(&src, "int stallscope_test_empty;\n").unwrap();
    let lib = dir.join("libempty.so");
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success());
    let script = format!("{} user", exe.display());
    let cmd = ["sh", "-c", script.as_str()];
    let set = |c: &mut std::process::Command| {
        c.env("LD_PRELOAD", &lib);
    };
    let plain = plain_run(dir.path(), &cmd, set);
    let (out, _) = profile_with(dir.path(), "user.prof", &[], &cmd, 3, set);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "the user's own LD_PRELOAD reaches the musl program, ours does not"
    );
    assert!(String::from_utf8_lossy(&plain.stdout).contains("libempty.so"));
}

/// The launched process's profile is at `-o` whatever it does with its environment; `report`
/// reads it, and no `.exec-N` is left beside it.
fn assert_profile_at_output(name: &str, cmd: &[&str], dir: &Path) {
    let (out, profile) = profile(dir, name, &[], cmd, 0);
    let report = report_json(&profile);
    assert!(!command_of(&report).is_empty(), "{}", describe(&out));
    let beside: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(name) && n.contains(".exec-"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
}

const CLEARENV: &str = r#"
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    clearenv();
    execl("/bin/true", "true", (char *)0);
    return 9;
}
"#;

const EMPTY_ENVP: &str = r#"
#include <unistd.h>
int main(void) {
    char *argv[] = {"true", 0};
    char *envp[] = {0};
    execve("/bin/true", argv, envp);
    return 9;
}
"#;

#[test]
fn an_emptied_environment_leaves_the_profile_at_the_output_path() {
    let dir = TempDir::new("emptied-env");
    assert_profile_at_output("envi.prof", &["env", "-i", "/bin/true"], dir.path());
    for (name, source) in [("clearenv", CLEARENV), ("empty_envp", EMPTY_ENVP)] {
        let src = dir.join(&format!("{name}.c"));
        std::fs::write(&src, source).unwrap();
        let exe = compile_file(dir.path(), &src, &[]);
        assert_profile_at_output(
            &format!("{name}.prof"),
            &[exe.to_str().unwrap()],
            dir.path(),
        );
    }
    // A wrapper that execs a static program: the wrapper's image goes to the path.
    let src = dir.join("static_true.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    if let Some(st) = try_compile(
        "cc",
        dir.path(),
        &src,
        "static_true",
        &["-static"],
        "libc6-dev",
    ) {
        let script = format!("exec {}", st.display());
        assert_profile_at_output("static.prof", &["sh", "-c", &script], dir.path());
    }
}
