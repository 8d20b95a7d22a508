//! What `report` prints, as a user sees it in a shell: the command line shell-quoted, and a
//! closed standard output (`stallscope report FILE | head`) ending the command quietly.

mod common;

use common::*;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn the_command_line_is_shown_shell_quoted() {
    let dir = TempDir::new("quoting");
    let (_, path) = profile(
        dir.path(),
        "q.prof",
        &["--no-sampling"],
        &["/bin/true", "--save", "", "two words", "it's"],
        0,
    );
    let out = Command::new(stallscope())
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("command"))
        .unwrap_or_else(|| panic!("no command line in\n{text}"));
    assert!(
        line.ends_with(r#"/bin/true --save '' 'two words' 'it'\''s'"#),
        "{line}"
    );
    // The JSON keeps the words as they were.
    let report = report_json(&path);
    assert_eq!(
        command_of(&report),
        ["/bin/true", "--save", "", "two words", "it's"]
    );
}

/// Runs `stallscope ARGS` with its standard output a pipe whose reading end is already closed.
fn with_closed_stdout(args: &[&str]) -> std::process::Output {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: closing the reading end we own; the writing end becomes the child's stdout.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is an open descriptor we own, given to the Stdio.
    let stdout = unsafe { <Stdio as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
    Command::new(stallscope())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_standard_output_ends_every_printing_command_quietly() {
    let sample = "tests/golden/sample.prof";
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(sample).is_file());
    for args in [
        &["report", sample][..],
        &["report", "--json", sample],
        &["export", "-f", "collapsed", sample],
        &["export", "-f", "json", sample],
        &["diff", sample, sample],
        &["demo", "--list"],
        &["preload-path"],
    ] {
        let out = with_closed_stdout(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe") && stderr.is_empty(),
            "stallscope {args:?} on a closed stdout:\n{stderr}"
        );
        // Quietly: success, or the default action of SIGPIPE as any Unix filter.
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "stallscope {args:?}: {:?}",
            out.status
        );
    }
}
