//! `stallscope bench --profile`: one extra run under `stallscope run` per variant.

mod common;

use common::{bench_json, f64_of};

#[test]
fn profile_shares_are_attached_to_each_variant() {
    let (json, terminal) = bench_json(
        "profile",
        &[
            "--runs",
            "2",
            "--profile",
            "sleep 0.01",
            "sh -c 'ls / >/dev/null'",
        ],
    );
    for variant in json["variants"].as_array().unwrap() {
        let profile = &variant["profile"];
        assert!(profile.is_object(), "no profile in {variant}");
        assert!(f64_of(profile, "wall_ns") >= 1e6, "{profile}");
        for share in ["alloc_share", "lock_share"] {
            let value = f64_of(profile, share);
            assert!((0.0..=1.0).contains(&value), "{share} = {value}");
        }
    }
    assert!(terminal.contains("Where the time went"), "{terminal}");
}
