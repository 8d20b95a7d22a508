//! speedscope's own file format (https://www.speedscope.app/file-format-schema.json): one shared
//! frame table, and per thread with samples a *sampled* profile (its sampled stacks in time order,
//! each weighted by the nanoseconds it stands for, the state as the root frame as in the
//! collapsed `wall` weight) and an *evented* profile (its stretches of one state, with its phases
//! nested inside: a state frame opens and closes around the phases open in it). Times are
//! nanoseconds from the process's start.

use super::{Exporter, Options, frame_name};
use crate::analysis::Analysis;
use crate::analysis::phases::PhaseSummary;
use crate::analysis::sampled::{self, SampleView, state_frame};
use crate::analysis::states::ThreadStates;
use crate::analysis::threads::ThreadId;
use crate::model::Model;
use anyhow::Result;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;

pub struct Speedscope;

/// The shared frame table, deduplicated by (name, file, line).
#[derive(Default)]
struct Frames {
    list: Vec<Value>,
    ids: HashMap<(String, String, u32), usize>,
}

impl Frames {
    fn id(&mut self, name: String, file: Option<&str>, line: Option<u32>) -> usize {
        let key = (name, file.unwrap_or("").to_string(), line.unwrap_or(0));
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let mut frame = json!({"name": key.0});
        if let Some(file) = file {
            frame["file"] = file.into();
        }
        if let Some(line) = line {
            frame["line"] = line.into();
        }
        self.list.push(frame);
        self.ids.insert(key, self.list.len() - 1);
        self.list.len() - 1
    }
}

/// A thread's name in the profile selector: its label (which says how many threads a folded group
/// stands for).
fn profile_name(t: &ThreadStates, what: &str) -> String {
    format!("{}: {what}", ThreadId::of_states(t).label())
}

fn sampled_profile(t: &ThreadStates, samples: &[&SampleView<'_>], frames: &mut Frames) -> Value {
    let mut stacks = Vec::with_capacity(samples.len());
    let mut weights = Vec::with_capacity(samples.len());
    for v in samples {
        let mut stack = vec![frames.id(state_frame(v.stack.category), None, None)];
        stack.extend(
            crate::analysis::collapsed::shown_frames(&v.stack.frames)
                .into_iter()
                .rev()
                .map(|f| frames.id(frame_name(f), f.file.as_deref(), f.line)),
        );
        stacks.push(stack);
        weights.push(v.sample.weight_ns);
    }
    let total: u64 = weights.iter().sum();
    json!({
        "type": "sampled", "name": profile_name(t, "sampled time"), "unit": "nanoseconds",
        "startValue": 0, "endValue": total, "samples": stacks, "weights": weights,
    })
}

/// The thread's state stretches with its phases inside them. Each phase is cut into pieces at
/// the state changes, so that every frame closes before its parent: the format needs nesting.
fn evented_profile(t: &ThreadStates, phases: &[&PhaseSummary], frames: &mut Frames) -> Value {
    let mut events = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for &(begin, end, c) in &t.runs {
        if end <= begin {
            continue;
        }
        first = first.min(begin);
        last = last.max(end);
        let state = frames.id(state_frame(c), None, None);
        events.push(json!({"type": "O", "frame": state, "at": begin}));
        // Phases clipped to the stretch, outermost first; an inner phase is clipped to its
        // parent's piece too, so that pieces nest.
        let mut open: Vec<(u64, usize)> = Vec::new();
        for ph in phases {
            let (b, e) = (ph.begin_ns.max(begin), ph.end_ns.min(end));
            if b >= e {
                continue;
            }
            while let Some(&(top_end, frame)) = open.last() {
                if top_end > b {
                    break;
                }
                events.push(json!({"type": "C", "frame": frame, "at": top_end}));
                open.pop();
            }
            let e = open.last().map_or(e, |&(top_end, _)| e.min(top_end));
            let frame = frames.id(format!("phase {}", ph.label), None, None);
            events.push(json!({"type": "O", "frame": frame, "at": b}));
            open.push((e, frame));
        }
        while let Some((top_end, frame)) = open.pop() {
            events.push(json!({"type": "C", "frame": frame, "at": top_end}));
        }
        events.push(json!({"type": "C", "frame": state, "at": end}));
    }
    json!({
        "type": "evented", "name": profile_name(t, "states and phases"), "unit": "nanoseconds",
        "startValue": if first == u64::MAX { 0 } else { first }, "endValue": last,
        "events": events,
    })
}

/// The whole file.
pub fn document(a: &Analysis) -> Value {
    let mut frames = Frames::default();
    let mut profiles = Vec::new();
    let views = sampled::samples(a);
    let (mut active, mut heaviest) = (0usize, 0u64);
    if let Some(r) = &a.states {
        for t in &r.threads {
            let mine: Vec<&SampleView<'_>> = views
                .iter()
                .filter(|v| v.thread.serial == t.serial)
                .collect();
            if !mine.is_empty() {
                let ns: u64 = mine.iter().map(|v| v.sample.weight_ns).sum();
                if ns > heaviest {
                    (active, heaviest) = (profiles.len(), ns);
                }
                profiles.push(sampled_profile(t, &mine, &mut frames));
            }
            if !t.runs.is_empty() {
                let mut phases: Vec<&PhaseSummary> =
                    a.phases.phases.iter().filter(|p| p.tid == t.tid).collect();
                phases.sort_by_key(|p| (p.begin_ns, p.depth));
                profiles.push(evented_profile(t, &phases, &mut frames));
            }
        }
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "exporter": format!("stallscope {}", env!("CARGO_PKG_VERSION")),
        "name": a.summary.command_line(),
        "activeProfileIndex": active,
        "shared": {"frames": frames.list},
        "profiles": profiles,
    })
}

impl Exporter for Speedscope {
    fn name(&self) -> &'static str {
        "speedscope"
    }

    fn write(&self, a: &Model, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        serde_json::to_writer(&mut *out, &document(a))?;
        writeln!(out)?;
        Ok(())
    }
}
