//! The report as JSON. The keys of schema `stallscope.report/1` are a contract: add keys freely,
//! never rename or remove one.

use super::sites::LockSiteSummary;
use super::summary::{FnSummary, Summary};
use crate::profile::format::size_bucket_range;
use crate::symbols::Frame;
use serde_json::{Map, Value, json};

fn function_json(f: &FnSummary) -> Value {
    json!({
        "calls": f.calls,
        "bytes": f.bytes,
        "time_ns": f.time_ns,
        "timed_calls": f.timed_calls,
        "mean_ns": f.mean_ns(),
        "p50_ns": f.quantile_ns(0.5),
        "p99_ns": f.quantile_ns(0.99),
    })
}

pub(super) fn frame_json(f: &Frame) -> Value {
    json!({
        "function": f.function,
        "file": f.file,
        "line": f.line,
        "module": f.module,
        "offset": format!("{:#x}", f.offset),
        "inlined": f.inlined,
    })
}

fn lock_site_json(site: &LockSiteSummary) -> Value {
    json!({
        "frames": site.frames.iter().map(frame_json).collect::<Vec<_>>(),
        "user_frame": site.user,
        "contended": site.contended,
        "wait_ns": site.wait_ns,
        "samples": site.samples,
    })
}

pub fn report_json(s: &Summary, path: &str) -> Value {
    let threads: Vec<Value> = s
        .threads
        .iter()
        .map(|t| {
            let mut v = json!({
                "tid": t.tid,
                "name": t.name,
                "main": t.main,
                "cpu_ns": t.cpu_ns,
                "wall_ns": t.wall_ns,
                "alloc_ns": t.alloc_ns,
                "alloc_calls": t.alloc_calls,
                "lock_wait_ns": t.lock_wait_ns,
            });
            if let (Some(n), Some(o)) = (t.folded, v.as_object_mut()) {
                o.insert("folded_threads".into(), json!(n));
            }
            v
        })
        .collect();
    let mut functions = Map::new();
    let mut latency = Map::new();
    for g in &s.groups {
        functions.insert(g.name.to_string(), function_json(g));
        let buckets: Vec<Value> = g
            .latency
            .iter()
            .map(|&(lo, hi, count)| json!({"min_ns": lo, "max_ns": hi, "count": count}))
            .collect();
        latency.insert(g.name.to_string(), Value::Array(buckets));
    }
    let mut by_function = Map::new();
    for f in &s.functions {
        by_function.insert(f.name.to_string(), function_json(f));
    }
    let size_histogram: Vec<Value> = s
        .size_hist
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, &count)| {
            let (lo, hi) = size_bucket_range(b);
            json!({"min_bytes": lo, "max_bytes": hi, "count": count})
        })
        .collect();
    let locks: Vec<Value> = s
        .locks
        .iter()
        .map(|l| {
            json!({
                "address": format!("{:#x}", l.address),
                "kind": l.kind,
                "acquisitions": l.acquisitions,
                "contended": l.contended,
                "wait_ns": l.wait_ns,
                "max_wait_ns": l.max_wait_ns,
                "hold_ns": l.hold_ns,
                "threads": l.threads,
                "sites": l.sites.iter().map(lock_site_json).collect::<Vec<_>>(),
                "holder_sites": l.holder_sites.iter().map(lock_site_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let sites: Vec<Value> = s
        .alloc_sites
        .iter()
        .map(|site| {
            let frames: Vec<Value> = site.frames.iter().map(frame_json).collect();
            json!({
                "frames": frames,
                "user_frame": site.user,
                "function": site.function,
                "calls": site.calls,
                "bytes": site.bytes,
                "time_ns": site.time_ns,
                "samples": site.samples,
            })
        })
        .collect();
    let stack_sampling = s.stack_sampling.map_or(Value::Null, |k| {
        json!({"count_period": k.count_period, "mean_bytes": k.mean_bytes, "dropped": k.dropped})
    });
    json!({
        "schema": "stallscope.report/1",
        "path": path,
        "command": s.command,
        "exe": s.exe,
        "pid": s.pid,
        "ppid": s.ppid,
        "exit_code": s.exit_code,
        "signal": s.signal,
        "complete": s.complete,
        "ended_by_exec": s.ended_by_exec,
        "core_dumped": s.core_dumped,
        "forked": s.forked,
        "start_time_unix_ns": s.start_time_unix_ns,
        "flushes": s.flushes,
        "cpu_ns": s.cpu_ns(),
        "wall_ns": s.wall_ns,
        "ncpus": s.ncpus,
        "libc_version": s.libc_version,
        "allocator": s.allocator,
        "timing": {
            "mode": if s.timing_exact { "exact" } else { "sampled" },
            "period": s.timing_period,
        },
        "threads": threads,
        "alloc": {
            "total_calls": s.alloc_calls(),
            "time_ns": s.alloc_ns(),
            "share_of_thread_time": s.alloc_share(),
            "functions": functions,
            "by_function": by_function,
            "size_histogram": size_histogram,
            "latency_histogram": latency,
            "sites": sites,
            "stack_sampling": stack_sampling,
            "cross_thread_frees": s.cross_frees.map(|c| json!({
                "calls": c.calls,
                "share": c.share,
                "sampled_frees": c.sampled,
                "sampled_cross": c.sampled_cross,
            })),
        },
        "locks": locks,
    })
}
