//! Folded stacks: one line per distinct stack, `root;...;leaf value`, sorted. Allocation sites
//! end with the allocator function they called (`malloc`, ...); lock waits with `<kind> wait`.

use super::{Exporter, Options, Weight, frame_name, lock_leaf};
use crate::analysis::Analysis;
use crate::symbols::Frame;
use anyhow::Result;
use std::collections::BTreeMap;
use std::io::Write;

pub struct Collapsed;

/// The folded stacks of a profile with their values (zero values left out).
pub fn stacks(a: &Analysis, weight: Weight) -> BTreeMap<String, u64> {
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |frames: &[Frame], leaf: String, value: u64| {
        if value == 0 {
            return;
        }
        let mut names: Vec<String> = frames.iter().rev().map(frame_name).collect();
        names.push(leaf);
        let line = names
            .iter()
            .map(|n| n.replace([';', '\n', '\r'], ":"))
            .collect::<Vec<_>>()
            .join(";");
        let total = lines.entry(line).or_default();
        *total = total.saturating_add(value);
    };
    match weight {
        Weight::LockWait => {
            for lock in &a.summary.locks {
                for site in &lock.sites {
                    add(&site.frames, lock_leaf(lock.kind), site.wait_ns);
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
                add(&site.frames, site.function.to_string(), value);
            }
        }
    }
    lines
}

impl Exporter for Collapsed {
    fn name(&self) -> &'static str {
        "collapsed"
    }

    fn write(&self, a: &Analysis, opts: &Options, out: &mut dyn Write) -> Result<()> {
        for (line, value) in stacks(a, opts.weight) {
            writeln!(out, "{line} {value}")?;
        }
        Ok(())
    }
}
