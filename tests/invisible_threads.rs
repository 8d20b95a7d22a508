//! The program's threads under `stallscope run` behave as without it (issue 12): a signal sent to
//! a thread as soon as it exists, threads created by the ten thousand, threads that block every
//! signal. Each test runs a hostile program from tests/hostile_programs/ with and without the
//! profiler and compares how it ends and what it prints.

mod common;
#[path = "hostile_programs/support.rs"]
mod support;

use common::*;
use support::*;

/// A handler that allocates, run in a new thread before the thread's own code: the thread must
/// get one record and one CPU timer, and the process must not die of SIGPROF (it did, 10 of 10).
#[test]
fn a_signal_at_thread_start_with_an_allocating_handler_is_harmless() {
    let dir = TempDir::new("inv-sigstart");
    let exe = hostile(dir.path(), "signal_new_thread");
    for round in 0..3 {
        let (out, prof) = same_as_plain(
            dir.path(),
            &format!("run{round}.prof"),
            &[],
            &[exe.to_str().unwrap(), "30"],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "handled 30 of 30\n",
            "{}",
            describe(&out)
        );
        let report = report_json(&prof);
        let threads = report["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 31, "one record per thread: {threads:?}");
    }
}
