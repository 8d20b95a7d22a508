//! Thread states as JSON keys (docs/STATES.md has the contract) and as terminal text: shares per
//! thread, a timeline, the lock and allocator stacks of each thread, parallel efficiency and the
//! hottest functions.

use super::json::frame_json;
use super::states::{CATEGORIES, Category, StateReport, StateSite, ThreadStates};
use crate::profile::samples::SamplingInfo;
use crate::util::{Style, fmt_ns, fmt_pct};
use serde_json::{Map, Value, json};
use std::fmt::Write;

/// The name of a signal number, as `kill -l` would put it.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    let rtmin = 34; // glibc's SIGRTMIN (the kernel's 32 and 33 are glibc's own)
    match sig {
        1..=31 => NAMES[sig as usize].to_string(),
        s if s >= rtmin => format!("SIGRTMIN+{}", s - rtmin),
        s => format!("signal {s}"),
    }
}

/// What to tell the user about how sampling ran, when there is something to tell.
pub fn sampling_note(s: &SamplingInfo) -> Option<String> {
    let mut notes = Vec::new();
    if let Some(from) = s.moved_from {
        match s.signal {
            Some(to) => notes.push(format!(
                "the program handles {}: CPU sampling stepped aside to {}",
                signal_name(from),
                signal_name(to)
            )),
            None => notes.push(format!(
                "the program handles {} and no free signal was left: no CPU samples",
                signal_name(from)
            )),
        }
    } else if s.no_signal {
        notes.push("no free signal for CPU sampling: no CPU samples".into());
    }
    if s.no_timers {
        notes.push("some threads' CPU timers could not be created".into());
    }
    if s.dropped > 0 {
        notes.push(format!("{} samples lost to full buffers", s.dropped));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

fn site_json(t: &ThreadStates, site: &StateSite) -> Value {
    json!({
        "share": if t.life_ns == 0 { 0.0 } else { site.ns as f64 / t.life_ns as f64 },
        "samples": site.samples,
        "ns": site.ns,
        "function": site.function(),
        "user_frame": site.user_frame().map(|f| f.display()),
        "frames": site.frames.iter().map(frame_json).collect::<Vec<_>>(),
    })
}

fn states_json(t: &ThreadStates) -> Value {
    let mut m = Map::new();
    for c in CATEGORIES {
        m.insert(format!("{}_ns", c.key()), json!(t.ns[c as usize]));
    }
    let accounted: u64 = t.ns.iter().sum();
    // Time no sample stands for: waiting for a CPU (runnable), or the tail after the last sample.
    m.insert(
        "unaccounted_ns".into(),
        json!(t.life_ns.saturating_sub(accounted)),
    );
    m.insert("samples".into(), json!(t.samples));
    Value::Object(m)
}

/// Adds the thread-state keys to a report's JSON (schema stallscope.report/1).
pub fn add_json_keys(value: &mut Value, sampling: Option<&SamplingInfo>, r: Option<&StateReport>) {
    let Some(object) = value.as_object_mut() else {
        return;
    };
    object.insert(
        "sampling".into(),
        match sampling {
            None => json!({ "enabled": false }),
            Some(s) => json!({
                "enabled": s.cpu_hz > 0 || s.wall_hz > 0,
                "cpu_hz": s.cpu_hz,
                "wall_hz": s.wall_hz,
                "signal": s.signal.map(signal_name),
                "moved_from": s.moved_from.map(signal_name),
                "note": sampling_note(s),
                "cpu_samples": s.cpu_samples,
                "wall_samples": s.wall_samples,
                "dropped": s.dropped,
            }),
        },
    );
    let Some(r) = r else {
        return;
    };
    if let Some(Value::Array(threads)) = object.get_mut("threads") {
        for (tj, t) in threads.iter_mut().zip(&r.threads) {
            let Some(tj) = tj.as_object_mut() else {
                continue;
            };
            tj.insert("states".into(), states_json(t));
            tj.insert(
                "sampling".into(),
                json!(if t.signal_blocked {
                    "kernel-clock"
                } else {
                    "signal"
                }),
            );
            let mut sites = Map::new();
            for c in [Category::Lock, Category::Allocator, Category::Atomic] {
                let list: Vec<Value> = t.top_sites(c, 5).map(|s| site_json(t, s)).collect();
                sites.insert(c.key().into(), Value::Array(list));
            }
            tj.insert("state_sites".into(), Value::Object(sites));
        }
    }
    object.insert(
        "hot".into(),
        Value::Array(
            r.hot
                .iter()
                .map(|h| {
                    json!({
                        "function": h.function,
                        "category": h.category.key(),
                        "samples": h.samples,
                        "ns": h.ns,
                        "user_frame": h.frames.get(h.user).map(|f| f.display()),
                        "frames": h.frames.iter().map(frame_json).collect::<Vec<_>>(),
                    })
                })
                .collect(),
        ),
    );
    let timeline_threads: Vec<Value> = r
        .threads
        .iter()
        .map(|t| {
            let slices: Vec<Value> = t
                .slices
                .iter()
                .map(|s| {
                    let mut m = Map::new();
                    for c in CATEGORIES {
                        let share = s[c as usize] as f64 / r.slice_ns as f64;
                        if share > 0.0 {
                            m.insert(c.key().into(), json!((share.min(1.0) * 1e4).round() / 1e4));
                        }
                    }
                    Value::Object(m)
                })
                .collect();
            json!({ "tid": t.tid, "name": t.name, "slices": slices })
        })
        .collect();
    object.insert(
        "timeline".into(),
        json!({ "slice_ns": r.slice_ns, "start_ns": 0, "threads": timeline_threads }),
    );
    object.insert(
        "parallel_efficiency".into(),
        json!({
            "compute_ns": r.compute_ns(),
            "wall_ns": r.wall_ns,
            "threads": r.peak_threads,
            "cpus": r.cpus,
            "value": r.parallel_efficiency(),
        }),
    );
}

/// The glyph of a slice: its largest category, or blank when the thread was hardly there.
fn slice_glyph(slice: &[u64; 7], slice_ns: u64) -> char {
    let total: u64 = slice.iter().sum();
    if total * 10 < slice_ns {
        return ' ';
    }
    let (i, _) = slice
        .iter()
        .enumerate()
        .max_by_key(|&(_, v)| *v)
        .expect("seven categories");
    CATEGORIES[i].glyph()
}

fn thread_label(t: &ThreadStates) -> String {
    let name = if t.name.is_empty() { "?" } else { &t.name };
    let mark = if t.signal_blocked { "‡" } else { "" };
    match t.folded {
        Some(n) => format!("{name} ×{n} (folded){mark}"),
        None => format!("{name} [{}]{}{mark}", t.tid, if t.main { "*" } else { "" }),
    }
}

/// "41% waiting on a lock inside random() called from worker (sim.cpp:12)"
fn site_sentence(t: &ThreadStates, site: &StateSite) -> String {
    let share = if t.life_ns == 0 {
        0.0
    } else {
        site.ns as f64 / t.life_ns as f64
    };
    let what = match site.category {
        Category::Lock => "waiting on a lock",
        Category::Allocator => "in the allocator",
        Category::Atomic => "on contended atomic instructions",
        _ => "",
    };
    let from = site
        .user_frame()
        .map(|f| format!(" called from {}", f.display()))
        .unwrap_or_default();
    format!(
        "{} {what} inside {}(){from}",
        fmt_pct(share),
        site.function()
    )
}

pub fn render_text(r: &StateReport, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", style.bold("Thread states (sampled)"));
    if let Some(note) = sampling_note(&r.sampling) {
        let _ = writeln!(out, "  {}", style.warn(&note));
    }
    let threads: Vec<&ThreadStates> = r.threads.iter().filter(|t| t.samples > 0).collect();
    if threads.is_empty() {
        let _ = writeln!(
            out,
            "  no samples (the run was too short, or sampling was off)"
        );
        return out;
    }
    let label_width = threads
        .iter()
        .map(|t| thread_label(t).chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = write!(out, "  {:label_width$}", "thread");
    for c in CATEGORIES {
        let _ = write!(out, " {:>9}", c.key().replace("kernel_memory", "kern-mem"));
    }
    out.push('\n');
    for t in &threads {
        let _ = write!(out, "  {:label_width$}", thread_label(t));
        for c in CATEGORIES {
            let share = t.share(c);
            let cell = if share < 0.0005 {
                "·".to_string()
            } else {
                fmt_pct(share)
            };
            let _ = write!(out, " {cell:>9}");
        }
        out.push('\n');
    }

    if threads.iter().any(|t| t.signal_blocked) {
        let _ = writeln!(
            out,
            "  {}",
            style.dim(
                "‡ blocks the sampling signal: running time from the kernel's CPU clock, counted as compute (not classified)"
            )
        );
    }
    if threads.iter().any(|t| t.folded.is_some()) {
        let _ = writeln!(
            out,
            "  {}",
            style.dim("(folded): short threads summed per name; shares are of their summed lives")
        );
    }

    let _ = writeln!(
        out,
        "\n  timeline: {} per column, {}",
        fmt_ns(r.slice_ns as f64),
        CATEGORIES
            .iter()
            .map(|c| format!("{} {}", c.glyph(), c.key()))
            .collect::<Vec<_>>()
            .join("  ")
    );
    for t in &threads {
        let row: String = t
            .slices
            .iter()
            .map(|s| slice_glyph(s, r.slice_ns))
            .collect();
        let _ = writeln!(out, "  {:label_width$} |{row}|", thread_label(t));
    }

    let mut lines = Vec::new();
    for t in &threads {
        for c in [Category::Lock, Category::Allocator, Category::Atomic] {
            for site in t.top_sites(c, 2) {
                if site.ns * 100 >= t.life_ns.max(1) {
                    lines.push(format!("  {}: {}", thread_label(t), site_sentence(t, site)));
                }
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(out, "\n  where threads wait (≥ 1% of a thread's life):");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }

    let _ = writeln!(
        out,
        "\n  parallel efficiency: {} (compute {} over {} wall x {} threads)",
        fmt_pct(r.parallel_efficiency()),
        fmt_ns(r.compute_ns() as f64),
        fmt_ns(r.wall_ns as f64),
        r.peak_threads.min(r.cpus.max(1) as usize).max(1)
    );
    let total: u64 = r.hot.iter().map(|h| h.samples).sum();
    if total > 0 {
        let _ = writeln!(out, "  hottest functions (CPU samples):");
        for h in r.hot.iter().take(8) {
            let _ = writeln!(
                out,
                "    {:>6}  {:<13} {}",
                fmt_pct(h.samples as f64 / total as f64),
                h.category.key(),
                h.function
            );
        }
    }
    out
}
