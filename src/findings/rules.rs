//! The rules as data: `rules.json` (embedded) holds each rule's detector, thresholds and texts, so
//! that a threshold is changed in one documented place (docs/FINDINGS.md says why each is where it is).

use super::Severity;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::OnceLock;

#[derive(Debug, Deserialize)]
struct RuleFile {
    rules: Vec<Rule>,
}

/// Whether a larger measure is worse (`above`, the default) or a smaller one (`below`).
#[derive(Debug, Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Above,
    Below,
}

/// The measure at which each severity starts; a missing level is never reached.
#[derive(Debug, Deserialize)]
pub struct Thresholds {
    pub info: Option<f64>,
    pub low: Option<f64>,
    pub medium: Option<f64>,
    pub high: Option<f64>,
}

/// A family of library functions, recognised by substrings of a frame's function name.
#[derive(Debug, Deserialize)]
pub struct Family {
    pub name: String,
    pub patterns: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct Rule {
    pub id: String,
    pub detector: String,
    #[serde(default)]
    pub params: Map<String, Value>,
    pub severity: Thresholds,
    /// The most severe level the finding can reach by what its cause costs (for the allocator
    /// rules: the allocator's share of the threads' CPU time), whatever its own measure says;
    /// below every level of it there is no finding. None: no such cap.
    #[serde(default)]
    pub cost_severity: Option<Thresholds>,
    #[serde(default)]
    pub direction: Direction,
    /// The finding rests on what threads waited in off a CPU: where most of that could not be
    /// read (`analysis::blind`), it is not drawn.
    #[serde(default)]
    pub off_cpu_states: bool,
    #[serde(default)]
    pub families: Vec<Family>,
    pub title: String,
    pub cause: String,
    pub remedy: String,
}

impl Rule {
    /// A numeric parameter; the embedded rules are checked by a test to carry every one used.
    pub fn param(&self, name: &str) -> f64 {
        self.params
            .get(name)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("rule {} lacks numeric parameter {name}", self.id))
    }

    pub fn param_strings(&self, name: &str) -> Vec<String> {
        self.params
            .get(name)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The severity that `measure` reaches, if any.
    pub fn severity_of(&self, measure: f64) -> Option<Severity> {
        level(&self.severity, self.direction, measure)
    }

    /// The severity that `measure` reaches, lowered to what `cost` reaches of `cost_severity`
    /// (None when the cost reaches no level of it).
    pub fn severity_with_cost(&self, measure: f64, cost: SampledShare) -> Option<Severity> {
        let severity = self.severity_of(measure)?;
        match &self.cost_severity {
            None => Some(severity),
            // Severity orders High first: the less severe of the two is the larger.
            Some(cap) => sampled_level(cap, Direction::Above, cost).map(|c| c.max(severity)),
        }
    }

    /// Whether a sampled share reaches a level of the severity thresholds at its bound, not
    /// only by its estimate (`sampled_level`).
    pub fn sampled_at_bound(&self, share: SampledShare) -> bool {
        level_at_bound(&self.severity, self.direction, share).is_some()
    }

    /// Whether a sampled cost reaches a level of `cost_severity` at its lower bound (true for a
    /// rule without cost levels).
    pub fn cost_at_bound(&self, cost: SampledShare) -> bool {
        self.cost_severity
            .as_ref()
            .is_none_or(|cap| level_at_bound(cap, Direction::Above, cost).is_some())
    }

    /// The severity a share measured on a sample reaches (a rule whose measure grows with the
    /// severity): see `sampled_level`.
    pub fn severity_of_sampled(&self, share: SampledShare) -> Option<Severity> {
        sampled_level(&self.severity, self.direction, share)
    }
}

/// A share measured on a sample (CPU samples): its estimate and how low it may be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampledShare {
    pub estimate: f64,
    /// About two standard errors below the estimate (`util::share_lower_bound`).
    pub low: f64,
    /// The samples it comes from (0: not from samples, `low` is the estimate).
    pub samples: u64,
}

impl SampledShare {
    pub fn new(estimate: f64, samples: u64) -> SampledShare {
        SampledShare {
            estimate,
            low: crate::util::share_lower_bound(estimate, samples as f64),
            samples,
        }
    }

    /// About two standard errors above the estimate: the complement's lower bound.
    pub fn high(&self) -> f64 {
        1.0 - crate::util::share_lower_bound(1.0 - self.estimate, self.samples as f64)
    }
}

/// The level a sampled share reaches at the bound nearest to no level (its lower bound for a rule
/// on large shares, its upper bound for one on small shares); when only its estimate reaches a
/// level, the least severe level of `s`: a share from few samples is not raised by its noise (on
/// a short run the allocator's share of CPU time measured 2.3%, 8.1% and 13.1% in three runs of
/// one program), nor hidden by it.
fn sampled_level(s: &Thresholds, direction: Direction, share: SampledShare) -> Option<Severity> {
    level_at_bound(s, direction, share).or_else(|| {
        level(s, direction, share.estimate)?;
        [
            (s.info, Severity::Info),
            (s.low, Severity::Low),
            (s.medium, Severity::Medium),
            (s.high, Severity::High),
        ]
        .into_iter()
        .find_map(|(t, severity)| t.map(|_| severity))
    })
}

/// The level a sampled share reaches at the bound nearest to no level: its lower bound for a rule
/// on large shares, its upper bound for one on small shares.
fn level_at_bound(s: &Thresholds, direction: Direction, share: SampledShare) -> Option<Severity> {
    let bound = match direction {
        Direction::Above => share.low,
        Direction::Below => share.high(),
    };
    level(s, direction, bound)
}

/// The level of `thresholds` that `measure` reaches, if any.
fn level(s: &Thresholds, direction: Direction, measure: f64) -> Option<Severity> {
    if !measure.is_finite() {
        return None;
    }
    let reached = |t: Option<f64>| {
        t.is_some_and(|t| match direction {
            Direction::Above => measure >= t,
            Direction::Below => measure < t,
        })
    };
    if reached(s.high) {
        Some(Severity::High)
    } else if reached(s.medium) {
        Some(Severity::Medium)
    } else if reached(s.low) {
        Some(Severity::Low)
    } else if reached(s.info) {
        Some(Severity::Info)
    } else {
        None
    }
}

const RULES_JSON: &str = include_str!("rules.json");

/// The embedded rules, parsed once.
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        serde_json::from_str::<RuleFile>(RULES_JSON)
            .expect("src/findings/rules.json is valid")
            .rules
    })
}

const RUN_RULES_JSON: &str = include_str!("run_rules.json");

/// The rules of a run of several processes, about the process tree as a whole
/// (`run_rules.json`, `run_tree.rs`), parsed once.
pub fn run_rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        serde_json::from_str::<RuleFile>(RUN_RULES_JSON)
            .expect("src/findings/run_rules.json is valid")
            .rules
    })
}

/// Every rule a report can draw its findings by: a process's (`rules.json`), then a run's of
/// several processes (`run_rules.json`). `help findings` lists these.
pub fn all_rules() -> impl Iterator<Item = &'static Rule> {
    rules().iter().chain(run_rules())
}

/// Replaces each `{name}` in `template` by its value; unknown placeholders stay as written.
pub fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_parse_with_unique_ids_and_ordered_thresholds() {
        let rules = rules();
        assert!(rules.len() >= 9);
        let mut ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), rules.len(), "duplicate rule ids");
        for r in rules {
            let levels: Vec<f64> = [
                r.severity.info,
                r.severity.low,
                r.severity.medium,
                r.severity.high,
            ]
            .into_iter()
            .flatten()
            .collect();
            assert!(!levels.is_empty(), "{} has no threshold", r.id);
            let ordered = levels.windows(2).all(|w| match r.direction {
                Direction::Above => w[0] < w[1],
                Direction::Below => w[0] > w[1],
            });
            assert!(ordered, "{} thresholds out of order", r.id);
            if let Some(c) = &r.cost_severity {
                let caps: Vec<f64> = [c.info, c.low, c.medium, c.high]
                    .into_iter()
                    .flatten()
                    .collect();
                assert!(!caps.is_empty(), "{} has an empty cost_severity", r.id);
                assert!(
                    caps.windows(2).all(|w| w[0] < w[1]),
                    "{} cost levels out of order",
                    r.id
                );
            }
        }
    }

    #[test]
    fn the_cost_caps_the_severity() {
        let rule: Rule = serde_json::from_str(
            r#"{"id": "t", "detector": "d", "title": "", "cause": "", "remedy": "",
                "severity": {"low": 0.5, "medium": 0.7, "high": 0.9},
                "cost_severity": {"low": 0.05, "medium": 0.1, "high": 0.2}}"#,
        )
        .unwrap();
        let exact = |share| SampledShare::new(share, 0);
        assert_eq!(
            rule.severity_with_cost(0.95, exact(0.5)),
            Some(Severity::High)
        );
        assert_eq!(
            rule.severity_with_cost(0.95, exact(0.054)),
            Some(Severity::Low)
        );
        assert_eq!(
            rule.severity_with_cost(0.95, exact(0.12)),
            Some(Severity::Medium)
        );
        assert_eq!(
            rule.severity_with_cost(0.6, exact(0.5)),
            Some(Severity::Low)
        );
        assert_eq!(rule.severity_with_cost(0.95, exact(0.01)), None);
        assert_eq!(rule.severity_with_cost(0.1, exact(0.5)), None);
        // A cost from few samples counts at its lower bound, but not below the lowest level
        // its estimate reaches: 13% of 40 samples may be 2.4%.
        let few = SampledShare::new(0.13, 40);
        assert!(few.low < 0.05, "{few:?}");
        assert_eq!(rule.severity_with_cost(0.95, few), Some(Severity::Low));
        // The same share from 4000 samples is what it says.
        assert_eq!(
            rule.severity_with_cost(0.95, SampledShare::new(0.13, 4000)),
            Some(Severity::Medium)
        );
        // An estimate below every level stays below, whatever its bound.
        assert_eq!(
            rule.severity_with_cost(0.95, SampledShare::new(0.03, 40)),
            None
        );
    }

    #[test]
    fn severity_follows_direction() {
        let rules = rules();
        let eff = rules
            .iter()
            .find(|r| r.direction == Direction::Below)
            .unwrap();
        assert_eq!(eff.severity_of(0.0), Some(Severity::High));
        assert_eq!(eff.severity_of(1.0), None);
        assert_eq!(eff.severity_of(f64::NAN), None);
    }

    #[test]
    fn fill_replaces_known_placeholders_only() {
        let s = fill("{a} and {b}", &[("a", "x".to_string())]);
        assert_eq!(s, "x and {b}");
    }
}
