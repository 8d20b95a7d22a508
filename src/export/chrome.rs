//! Chrome's Trace Event Format (`{"traceEvents": [...], "displayTimeUnit": "ns"}`), for
//! chrome://tracing, Perfetto or speedscope. Times are microseconds from the process's start.
//! Each source of events is its own function in [`events`]: names, thread lives, sampled thread
//! states (stretches of one category), phases, wait-for arrows, heap counters.

use super::{Exporter, Options};
use crate::analysis::Analysis;
use crate::analysis::threads::ThreadId;
use crate::model::Model;
use anyhow::Result;
use serde_json::{Value, json};
use std::io::Write;

pub struct Chrome;

/// Nanoseconds to the format's microseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// All the events of a profile, in the order of their sources.
pub fn events(p: &Analysis) -> Vec<Value> {
    let mut out = Vec::new();
    out.extend(metadata_events(p));
    out.extend(thread_events(p));
    out.extend(state_events(p));
    out.extend(phase_events(p));
    out.extend(wait_for_flow_events(p));
    out.extend(heap_events(p));
    out
}

/// The process's and threads' names (`ph: "M"`).
fn metadata_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    let command = p.summary.command_line();
    let mut out = vec![json!({
        "name": "process_name", "ph": "M", "pid": pid, "tid": pid, "ts": 0,
        "args": {"name": command},
    })];
    for t in &p.profile.threads {
        let name = ThreadId::of_profile(t).label();
        out.push(json!({
            "name": "thread_name", "ph": "M", "pid": pid, "tid": t.tid, "ts": 0,
            "args": {"name": name},
        }));
    }
    out
}

/// One complete event (`ph: "X"`) per thread, its lifetime, with its figures as arguments.
fn thread_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    let start = p.profile.process.start_mono_ns;
    p.threads()
        .filter_map(|v| v.summary.map(|s| (v.record, s)))
        .map(|(t, s)| {
            let end = p.profile.thread_end_ns(t);
            let begin = t.start_mono_ns.saturating_sub(start);
            json!({
                "name": "thread", "cat": "thread", "ph": "X", "pid": pid, "tid": t.tid,
                "ts": us(begin), "dur": us(end.saturating_sub(t.start_mono_ns)),
                "args": {
                    "cpu_ns": s.cpu_ns, "alloc_ns": s.alloc_ns, "alloc_calls": s.alloc_calls,
                    "lock_wait_ns": s.lock_wait_ns,
                },
            })
        })
        .collect()
}

/// The sampled thread states: one complete event per stretch of one category, named after it.
fn state_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    let Some(r) = &p.states else {
        return Vec::new();
    };
    r.threads
        .iter()
        .flat_map(|t| {
            t.runs.iter().map(move |&(begin, end, c)| {
                json!({
                    "name": c.key(), "cat": "state", "ph": "X", "pid": pid, "tid": t.tid,
                    "ts": us(begin), "dur": us(end.saturating_sub(begin)),
                })
            })
        })
        .collect()
}

/// Phases as complete events on their thread, with their allocator calls and time.
fn phase_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    p.phases
        .phases
        .iter()
        .map(|ph| {
            let mut args = serde_json::Map::new();
            args.insert("depth".into(), json!(ph.depth));
            for f in &ph.fns {
                args.insert(format!("{}_calls", f.name), json!(f.calls));
                args.insert(format!("{}_ns", f.name), json!(f.time_ns));
            }
            json!({
                "name": ph.label, "cat": "phase", "ph": "X", "pid": pid, "tid": ph.tid,
                "ts": us(ph.begin_ns), "dur": us(ph.wall_ns()), "args": args,
            })
        })
        .collect()
}

/// At most this many wait-for arrows, the longest waits: a trace stays small and readable.
const MAX_FLOWS: usize = 2000;

/// The wait-for edges as flow events, one arrow per recorded wait whose other end is known:
/// `ph: "s"` on the thread that released the lock, signalled or ended (joins), `ph: "f"` with
/// `bp: "e"` on the thread it let go on, both at the wait's end, sharing an `id`. Each binds to
/// the thread's life slice, so Perfetto and chrome://tracing draw it between the two rows.
fn wait_for_flow_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    let start = p.profile.process.start_mono_ns;
    let tid_of: std::collections::HashMap<u32, u32> = p
        .profile
        .threads
        .iter()
        .map(|t| (t.serial, t.tid))
        .collect();
    let mut waits: Vec<(&crate::profile::samples::Wait, u32, u32)> = p
        .profile
        .waits
        .iter()
        .filter_map(|w| {
            let waiter = *tid_of.get(&w.serial)?;
            let other = w.other_tid.filter(|&o| o != 0 && o != waiter)?;
            Some((w, waiter, other))
        })
        .collect();
    waits.sort_by_key(|(w, ..)| std::cmp::Reverse(w.end_mono_ns.saturating_sub(w.start_mono_ns)));
    waits.truncate(MAX_FLOWS);
    waits.sort_by_key(|(w, ..)| w.end_mono_ns);
    let mut out = Vec::with_capacity(2 * waits.len());
    for (id, (w, waiter, other)) in waits.into_iter().enumerate() {
        let ts = us(w.end_mono_ns.saturating_sub(start));
        let name = w.kind.name();
        out.push(json!({
            "name": name, "cat": "wait-for", "ph": "s", "id": id, "pid": pid, "tid": other, "ts": ts,
        }));
        out.push(json!({
            "name": name, "cat": "wait-for", "ph": "f", "bp": "e", "id": id, "pid": pid,
            "tid": waiter, "ts": ts,
        }));
    }
    out
}

/// Heap snapshots as a counter (`ph: "C"`): bytes in use, free in the arenas, resident.
fn heap_events(p: &Analysis) -> Vec<Value> {
    let pid = p.profile.process.pid;
    let start = p.profile.process.start_mono_ns;
    p.phases
        .snapshots
        .iter()
        .map(|h| {
            json!({
                "name": "heap", "ph": "C", "pid": pid, "tid": h.tid,
                "ts": us(h.mono_ns.saturating_sub(start)),
                "args": {"in_use": h.in_use_bytes(), "free": h.free_bytes, "rss": h.rss_bytes},
            })
        })
        .collect()
}

impl Exporter for Chrome {
    fn name(&self) -> &'static str {
        "chrome"
    }

    fn write(&self, p: &Model, _opts: &Options, out: &mut dyn Write) -> Result<()> {
        let doc = json!({"traceEvents": events(p), "displayTimeUnit": "ns"});
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
        Ok(())
    }
}
