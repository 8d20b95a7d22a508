//! Helpers of the detectors' unit tests: the embedded rules by id and the thresholds around which
//! each severity changes.

use super::Severity;
use super::rules::{Direction, Rule, rules};

pub fn rule(id: &str) -> &'static Rule {
    rules().iter().find(|r| r.id == id).expect("rule exists")
}

/// Each (threshold, severity) of `rule`, so tests probe just under and just over every level.
pub fn levels(rule: &Rule) -> Vec<(f64, Severity)> {
    let s = &rule.severity;
    [
        (s.info, Severity::Info),
        (s.low, Severity::Low),
        (s.medium, Severity::Medium),
        (s.high, Severity::High),
    ]
    .into_iter()
    .filter_map(|(t, sev)| t.map(|t| (t, sev)))
    .collect()
}

/// A measure just on the quiet side of `t` and just on the reached side.
pub fn around(rule: &Rule, t: f64) -> (f64, f64) {
    let eps = t.abs() * 0.01 + 1e-6;
    match rule.direction {
        Direction::Above => (t - eps, t + eps),
        Direction::Below => (t + eps, t - eps),
    }
}

/// Checks that `severity_at(measure)` is one level less severe just before each threshold and that
/// level just after (`None` before the first).
pub fn check_levels(rule: &Rule, severity_at: impl Fn(f64) -> Option<Severity>) {
    let mut before = None;
    for (t, sev) in levels(rule) {
        let (under, over) = around(rule, t);
        assert_eq!(severity_at(under), before, "{} just before {t}", rule.id);
        assert_eq!(severity_at(over), Some(sev), "{} just after {t}", rule.id);
        before = Some(sev);
    }
}

/// A frame of a test stack: its function, file and line, and module.
pub fn frame(
    function: Option<&str>,
    file_line: Option<(&str, u32)>,
    module: &str,
) -> crate::symbols::Frame {
    crate::symbols::Frame {
        function: function.map(str::to_string),
        file: file_line.map(|(f, _)| f.to_string()),
        line: file_line.map(|(_, l)| l),
        module: module.into(),
        offset: 0,
        inlined: false,
    }
}

/// A request-size histogram with `count` requests in the bucket that ends at `max_bytes`.
pub fn sized_hist(buckets: &[(u64, u64)]) -> Vec<u64> {
    use crate::profile::format::{SIZE_BUCKETS, size_bucket_range};
    let mut hist = vec![0u64; SIZE_BUCKETS];
    for &(max_bytes, count) in buckets {
        let b = (0..SIZE_BUCKETS)
            .find(|&b| size_bucket_range(b).1 == max_bytes)
            .expect("a bucket ends there");
        hist[b] += count;
    }
    hist
}

/// Works out the model's efficiency of a test analysis again, after the test changed its states.
pub fn refresh_efficiency(a: &mut crate::analysis::Analysis) {
    a.efficiency =
        crate::analysis::efficiency::build(&a.summary, a.states.as_ref(), a.concurrency.is_some());
}
