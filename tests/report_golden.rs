//! `stallscope report` and `report --json`, the main output, on fixed profiles compared with the
//! golden files next to them: tests/golden/sample.prof (allocation and lock sites, phases, heap
//! snapshots; no thread-state sampling) and tests/golden/sampled.prof (the same program with
//! thread states). Both are real profiles of tests/golden/work.c passed through
//! tests/golden/anonymize.py, so frames print as `module+offset` on every machine.
//! `STALLSCOPE_BLESS=1 cargo test --release --test report_golden` rewrites the golden files.

mod common;

use common::{check_golden, stallscope_in_repo};
use serde_json::Value;

#[test]
fn report_text_matches_golden() {
    for name in ["sample", "sampled"] {
        let profile = format!("tests/golden/{name}.prof");
        check_golden(
            &format!("{name}.report.txt"),
            &stallscope_in_repo(&["report", &profile]),
        );
        check_golden(
            &format!("{name}.report-stacks.txt"),
            &stallscope_in_repo(&["report", "--stacks", &profile]),
        );
    }
}

#[test]
fn report_json_matches_golden() {
    for name in ["sample", "sampled"] {
        let profile = format!("tests/golden/{name}.prof");
        let out = stallscope_in_repo(&["report", "--json", &profile]);
        check_golden(&format!("{name}.json"), &out);
        let report: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(report["schema"], "stallscope.report/1");
        assert_eq!(report["path"], profile.as_str());
    }
    // The sampled profile carries every thread-state key of docs/STATES.md.
    let sampled: Value = serde_json::from_slice(&stallscope_in_repo(&[
        "report",
        "--json",
        "tests/golden/sampled.prof",
    ]))
    .unwrap();
    assert_eq!(sampled["sampling"]["enabled"], true);
    for key in ["hot", "timeline", "parallel_efficiency"] {
        assert!(sampled[key].is_object() || sampled[key].is_array(), "{key}");
    }
    for t in sampled["threads"].as_array().unwrap() {
        assert!(t["states"]["compute_ns"].is_u64(), "{t}");
        assert!(t["state_sites"]["lock"].is_array(), "{t}");
    }
}

#[test]
fn reports_of_several_profiles_are_an_array_and_a_sequence() {
    let both = stallscope_in_repo(&[
        "report",
        "--json",
        "tests/golden/sample.prof",
        "tests/golden/sampled.prof",
    ]);
    let reports: Value = serde_json::from_slice(&both).unwrap();
    assert_eq!(reports.as_array().map(Vec::len), Some(2));
    let text = String::from_utf8(stallscope_in_repo(&[
        "report",
        "tests/golden/sample.prof",
        "tests/golden/sampled.prof",
    ]))
    .unwrap();
    assert_eq!(text.matches("stallscope profile tests/golden/").count(), 2);
}
