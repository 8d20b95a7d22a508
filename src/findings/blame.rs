//! The work other threads waited for (`crate::analysis::blame`): the code that ran while threads
//! of the process waited for work, named at its line, with what the waiters lost and what
//! sharing the work out would save. One finding for every runtime and waiting primitive; what
//! the working code was (a serial stretch, the long tail of an uneven split, a step only one
//! thread may run at a time) picks the words of its cause and remedy (rules.json, `kinds`).

use super::rules::Rule;
use super::scaling::{speedup_words, with_stake};
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::blame::Culprit;
use crate::util::{fmt_ns, fmt_pct, ratio};

/// What the working code was, by how its threads ran it.
fn kind(rule: &Rule, c: &Culprit) -> &'static str {
    let alone = c.alone_ns as f64;
    if c.threads.len() >= 2 && (c.concurrent_ns as f64) < rule.param("turns_overlap_below") * alone
    {
        // Several threads ran it, never together, while the others waited: one at a time.
        "turns"
    } else if c.work_ns as f64 >= rule.param("uneven_work_above") * alone {
        // It also ran while nobody waited (in parallel): the others finished their share first.
        "uneven"
    } else {
        "serial"
    }
}

/// "1 other thread" or "1.6 other threads": the mean number of threads that waited.
fn waiting_words(n: f64) -> String {
    if (n - n.round()).abs() < 0.15 {
        let n = n.round().max(1.0) as u64;
        format!("{n} other thread{}", if n == 1 { "" } else { "s" })
    } else {
        format!("{n:.1} other threads")
    }
}

pub fn work_ran_alone(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let (Some(blame), Some(states)) = (a.blame.as_ref(), a.states.as_ref()) else {
        return vec![];
    };
    let wall = states.wall_ns.max(1);
    let kinds = rule
        .params
        .get("kinds")
        .and_then(|k| k.as_object())
        .cloned()
        .unwrap_or_default();
    let text = |kind: &str, field: &str| {
        kinds
            .get(kind)
            .and_then(|k| k.get(field))
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    blame
        .culprits
        .iter()
        .take(rule.param("max_findings") as usize)
        .filter(|c| c.gain_ns as f64 >= rule.param("min_gain_ns"))
        .filter_map(|c| {
            let severity = rule.severity_of(ratio(c.gain_ns, wall))?;
            let kind = kind(rule, c);
            let frame = c.place();
            let waiting = waiting_words(c.mean_waiting());
            let wait = c
                .waits
                .first()
                .map_or_else(|| "a wait".to_string(), |w| w.0.clone());
            let construct = c
                .construct
                .as_ref()
                .map_or_else(String::new, |w| format!(" (in {w})"));
            let threads = c.thread_labels(states);
            let waited: u64 = c.waits.iter().map(|w| w.1).sum();
            let mut evidence = vec![format!(
                "it ran {} on {} while other threads waited for work; they lost {} of thread time a free CPU could have used",
                fmt_ns(c.alone_ns as f64),
                threads.join(", "),
                fmt_ns(c.charged_ns as f64)
            )];
            if waited > 0 {
                let parts: Vec<String> = c
                    .waits
                    .iter()
                    .take(3)
                    .map(|(w, ns)| format!("{w} {}", fmt_pct(ratio(*ns, waited))))
                    .collect();
                evidence.push(format!("they waited in: {}", parts.join(", ")));
            }
            if let Some(caller) = &c.caller {
                evidence.push(format!("called from {}", caller.display()));
            }
            if c.work_ns > c.alone_ns {
                evidence.push(format!(
                    "it ran {} in all, {} of it while no thread waited for it",
                    fmt_ns(c.work_ns as f64),
                    fmt_ns(c.work_ns.saturating_sub(c.alone_ns) as f64)
                ));
            }
            let values = [
                ("user_frame", frame),
                ("alone", fmt_ns(c.alone_ns as f64)),
                ("waiting", waiting),
                ("wait", wait),
                ("construct", construct),
                ("share", fmt_pct(ratio(c.gain_ns, wall))),
                ("speedup", speedup_words(wall, c.gain_ns)),
                ("kind_cause", text(kind, "cause")),
                ("kind_remedy", text(kind, "remedy")),
            ];
            let mut f = build(rule, a, severity, &values, evidence);
            // The kinds' texts hold placeholders of their own.
            f.cause = super::rules::fill(&f.cause, &values);
            f.remedy = super::rules::fill(&f.remedy, &values);
            f.about = std::iter::once(c.name())
                .chain(c.construct.clone())
                .collect();
            Some(with_stake(f, a, c.gain_ns))
        })
        .collect()
}
