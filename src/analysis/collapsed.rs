//! Folded stacks: one line per distinct stack, `root;...;leaf value`, sorted. Allocation sites
//! end with the allocator function they called (`malloc`, ...); lock waits with `<kind> wait`.
//! Sampled weights (ns of thread time): `cpu` stacks end at the sampled instruction's function,
//! so the hottest function is on top; `wall`, `off-cpu` and a state's stacks start with the
//! state as their root frame (`[lock];main;...`). Root rather than leaf: the graph then splits
//! into one tower per state, as wide as that state's share of the time, and each tower is the
//! flame graph of where that state happens; as a leaf, a frame that both runs and waits would
//! be one column with its states as thin slivers on top.

//!
//! The weights and the stacks are shared by the views that draw or write them (`export`'s
//! collapsed stacks, `html`'s flame graph).

use crate::analysis::Analysis;
use crate::analysis::sampled::{self, SampleWeight};
use crate::analysis::states::CATEGORIES;
use crate::symbols::Frame;
use std::collections::BTreeMap;

/// What the value of a collapsed stack is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// Estimated allocator calls of each allocation site
    Calls,
    /// Estimated requested bytes of each allocation site
    Bytes,
    /// Estimated nanoseconds in the allocator of each allocation site
    Time,
    /// Nanoseconds waited for locks, by the waiting threads' stacks
    LockWait,
    /// Sampled thread time (ns): CPU, all time, off-CPU, or one state's
    Sampled(SampleWeight),
}

impl Weight {
    /// Whether the weight is time (ns), comparable with the other time weights.
    pub fn is_time(self) -> bool {
        !matches!(self, Weight::Calls | Weight::Bytes)
    }

    pub fn parse(s: &str) -> Result<Weight, String> {
        match s {
            "calls" => Ok(Weight::Calls),
            "bytes" => Ok(Weight::Bytes),
            "time" => Ok(Weight::Time),
            "lock-wait" => Ok(Weight::LockWait),
            _ => SampleWeight::parse(s).map(Weight::Sampled).ok_or_else(|| {
                format!(
                    "unknown weight {s:?}: expected one of {}",
                    weight_names().join(", ")
                )
            }),
        }
    }
}

/// Every `--weight` value: the allocator and lock weights, then the sampled ones (every state).
pub fn weight_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "calls",
        "bytes",
        "time",
        "lock-wait",
        "cpu",
        "wall",
        "off-cpu",
    ]
    .map(String::from)
    .to_vec();
    names.extend(CATEGORIES.iter().map(|c| c.key().to_string()));
    names
}

/// A frame's name in exported stacks: its function, else `module+0xoffset`.
pub fn frame_name(f: &Frame) -> String {
    f.name()
}

/// The leaf frame added below a lock wait's stack.
pub fn lock_leaf(kind: &str) -> String {
    format!("{kind} wait")
}

/// The frames of a stack as the exports show them, outermost first: without the interposer's
/// trampolines between the program's frames (`ss_main_wrapper`, `ss_omp_body`: stallscope's own
/// code, which the program does not call). The interposer's innermost frames stay: a hook's
/// slow part stands for the function the program called, and its own work is its own.
fn shown_names(frames: &[Frame]) -> Vec<String> {
    shown_frames(frames)
        .into_iter()
        .rev()
        .map(frame_name)
        .collect()
}

/// The frames every export shows, innermost first: `shown_names`'s.
pub fn shown_frames(frames: &[Frame]) -> Vec<&Frame> {
    let inner_program = frames
        .iter()
        .position(|f| !crate::symbols::is_own_module(&f.module))
        .unwrap_or(frames.len());
    frames
        .iter()
        .enumerate()
        .filter(|(i, f)| *i < inner_program || !crate::symbols::is_own_module(&f.module))
        .map(|(_, f)| f)
        .collect()
}

/// The folded stacks of a profile with their values (zero values left out).
pub fn stacks(a: &Analysis, weight: Weight) -> BTreeMap<String, u64> {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let add = |lines: &mut BTreeMap<String, u64>, frames: &[Frame], leaf: String, value: u64| {
        add_names(lines, shown_names(frames), leaf, value);
    };
    match weight {
        Weight::Sampled(w) => {
            for v in sampled::samples(a) {
                let value = w.of(&v);
                if value == 0 {
                    continue;
                }
                let mut names = Vec::new();
                if w != SampleWeight::Cpu {
                    names.push(sampled::state_frame(v.stack.category));
                }
                names.extend(shown_names(&v.stack.frames));
                if let Some(leaf) = names.pop() {
                    add_names(&mut lines, names, leaf, value);
                }
            }
        }
        Weight::LockWait => {
            for lock in &a.summary.locks {
                for site in &lock.sites {
                    add(&mut lines, &site.frames, lock_leaf(lock.kind), site.wait_ns);
                }
            }
        }
        _ => {
            for site in &a.summary.alloc_sites {
                let value = match weight {
                    Weight::Calls => site.calls,
                    Weight::Bytes => site.bytes,
                    _ => site.time_ns,
                };
                add(&mut lines, &site.frames, site.function.to_string(), value);
            }
        }
    }
    lines
}

/// Adds one stack, `names` root first then `leaf`, to the folded lines.
fn add_names(lines: &mut BTreeMap<String, u64>, mut names: Vec<String>, leaf: String, value: u64) {
    if value == 0 {
        return;
    }
    names.push(leaf);
    let line = names
        .iter()
        .map(|n| n.replace([';', '\n', '\r'], ":"))
        .collect::<Vec<_>>()
        .join(";");
    let total = lines.entry(line).or_default();
    *total = total.saturating_add(value);
}
