//! A process that drops its privileges (non-dumpable: its /proc files belong to root) keeps its
//! output and exit status, and its report says plainly that what its threads waited in could not
//! be read, and draws no finding about waiting from it (a guess there would read, for
//! `mariadbd --user=mysql`, as a HIGH serial-section). The same program without the drop is the
//! control.

mod common;

use common::{TempDir, assert_invariants, compile_file, profile, report_json, test_source};
use serde_json::Value;

fn ids(r: &Value) -> Vec<String> {
    r["findings"]
        .as_array()
        .map_or(&[][..], |v| v.as_slice())
        .iter()
        .map(|f| f["id"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_privilege_drop_is_reported_blind_and_draws_no_finding_about_waiting() {
    let dir = TempDir::new("privilege-drop");
    let exe = compile_file(
        dir.path(),
        &test_source("state_programs", "privilege_drop.c"),
        &["-pthread"],
    );
    let exe = exe.display().to_string();
    let (out, prof) = profile(dir.path(), "drop.prof", &["-q"], &[exe.as_str()], 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains('.'));
    let r = report_json(&prof);
    assert_invariants(&r, &prof);
    let found = ids(&r);
    assert!(found.contains(&"blind-states".to_string()), "{found:?}");
    for waiting in [
        "work-ran-alone",
        "serial-section",
        "load-imbalance",
        "parallel-efficiency",
    ] {
        assert!(
            !found.contains(&waiting.to_string()),
            "{waiting} from a guess: {found:?}"
        );
    }
    let blame = &r["blame"];
    assert!(blame.is_null() || blame["charged_ns"] == 0, "{blame:#}");

    // The control: the same work, readable, is named.
    let (_, prof) = profile(dir.path(), "keep.prof", &["-q"], &[exe.as_str(), "keep"], 0);
    let r = report_json(&prof);
    assert_invariants(&r, &prof);
    let found = ids(&r);
    assert!(!found.contains(&"blind-states".to_string()), "{found:?}");
    if !found.contains(&"work-ran-alone".to_string()) {
        if let Some(why) = common::starved(&r, 0.15) {
            common::skipped("privilege_drop control", &why);
            return;
        }
        panic!("the readable run names no work others waited for: {found:?}");
    }
}
