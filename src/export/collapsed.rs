//! Folded stacks: one line per distinct stack, `root;...;leaf value`, sorted. Allocation sites
//! end with the allocator function they called (`malloc`, ...); lock waits with `<kind> wait`.
//! Sampled weights (ns of thread time): `cpu` stacks end at the sampled instruction's function,
//! so the hottest function is on top; `wall`, `off-cpu` and a state's stacks start with the
//! state as their root frame (`[lock];main;...`). Root rather than leaf: the graph then splits
//! into one tower per state, as wide as that state's share of the time, and each tower is the
//! flame graph of where that state happens; as a leaf, a frame that both runs and waits would
//! be one column with its states as thin slivers on top.

use super::{Exporter, Options, Weight, frame_name, lock_leaf};
use crate::analysis::Analysis;
use crate::analysis::sampled::{self, SampleWeight};
use crate::model::Model;
use crate::symbols::Frame;
use anyhow::Result;
use std::collections::BTreeMap;
use std::io::Write;

pub struct Collapsed;

/// The folded stacks of a profile with their values (zero values left out).
pub fn stacks(a: &Analysis, weight: Weight) -> BTreeMap<String, u64> {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let add = |lines: &mut BTreeMap<String, u64>, frames: &[Frame], leaf: String, value: u64| {
        let names: Vec<String> = frames.iter().rev().map(frame_name).collect();
        add_names(lines, names, leaf, value);
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
                names.extend(v.stack.frames.iter().rev().map(frame_name));
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

impl Exporter for Collapsed {
    fn name(&self) -> &'static str {
        "collapsed"
    }

    fn write(&self, a: &Model, opts: &Options, out: &mut dyn Write) -> Result<()> {
        for (line, value) in stacks(a, opts.weight) {
            writeln!(out, "{line} {value}")?;
        }
        Ok(())
    }
}
