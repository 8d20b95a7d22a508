//! The phase stage of the analysis: each phase with its allocator figures and the heap before and
//! after, the heap snapshots, and the flag for a phase whose allocator calls cost far more per call
//! than in another run of the same phase, with the heap state that explains it.

use super::summary::latency_quantile;
use crate::profile::Profile;
use crate::profile::format::{GROUPS, latency_bucket_range};
use crate::profile::phases::{HeapSnapshot, PhaseRecord};
use crate::util::{fmt_bytes, fmt_count, fmt_ns, ratio};
use std::fmt::Write;

/// When a phase is flagged: its mean time per call of `function` is at least `ratio` times the
/// lowest of the other runs of the same phase (same name and depth: the same work, in another heap
/// state), both having at least `min_calls` calls and `min_timed` timed ones (enough for a stable
/// mean under 1-in-256 sampling). Different phases do different work and are never compared.
pub struct SlowdownRule {
    pub function: &'static str,
    pub min_calls: u64,
    pub min_timed: u64,
    pub ratio: f64,
}

pub const SLOWDOWN_RULES: [SlowdownRule; 2] = [
    SlowdownRule {
        function: "malloc",
        min_calls: 10_000,
        min_timed: 200,
        ratio: 3.0,
    },
    SlowdownRule {
        function: "free",
        min_calls: 10_000,
        min_timed: 200,
        ratio: 3.0,
    },
];

/// One allocator function group inside a phase.
#[derive(Debug, Clone, Default)]
pub struct PhaseFn {
    pub name: &'static str,
    pub calls: u64,
    pub bytes: u64,
    pub timed_calls: u64,
    pub time_ns: u64,
    pub p99_ns: Option<f64>,
}

impl PhaseFn {
    /// The mean time per call, when some call was timed.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.timed_calls > 0).then(|| ratio(self.time_ns, self.calls))
    }
}

#[derive(Debug, Clone, Default)]
pub struct PhaseSummary {
    pub name: String,
    /// The name, with "#k" when the same phase ran several times on that thread.
    pub label: String,
    pub tid: u32,
    pub depth: u32,
    pub begin_ns: u64,
    pub end_ns: u64,
    pub fns: Vec<PhaseFn>,
    pub heap_before: Option<HeapSnapshot>,
    pub heap_after: Option<HeapSnapshot>,
}

impl PhaseSummary {
    pub fn wall_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.begin_ns)
    }
    /// The same work as `other` in the same place: the same phase (name and depth), run again
    /// by the same thread. (On another thread it runs in another arena of glibc's heap, with
    /// its own history, and the thread may have shared its CPU with other work meanwhile: per-call
    /// times of two threads differ for reasons the phases do not show.)
    pub fn same_work(&self, other: &PhaseSummary) -> bool {
        self.name == other.name && self.depth == other.depth && self.tid == other.tid
    }
    pub fn function(&self, name: &str) -> Option<&PhaseFn> {
        self.fns.iter().find(|f| f.name == name)
    }
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PhaseFlag {
    pub phase: String,
    pub baseline_phase: String,
    pub function: &'static str,
    pub ratio: f64,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct PhaseReport {
    pub phases: Vec<PhaseSummary>,
    pub snapshots: Vec<HeapSnapshot>,
    pub flags: Vec<PhaseFlag>,
    pub start_mono_ns: u64,
}

fn phase_fn(p: &Profile, r: &PhaseRecord, group: usize) -> PhaseFn {
    let (name, members) = GROUPS[group];
    let (mut calls, mut bytes, mut timed_calls, mut ticks) = (0, 0, 0, 0.0f64);
    for &i in members {
        let f = &r.fns[i];
        calls = u64::saturating_add(calls, f.calls);
        bytes = u64::saturating_add(bytes, f.bytes);
        timed_calls = u64::saturating_add(timed_calls, f.measured_calls());
        ticks += f.estimated_ticks();
    }
    let latency: Vec<(u64, u64, u64)> = r.lat_hist[group]
        .iter()
        .enumerate()
        .map(|(b, &count)| {
            let (lo, hi) = latency_bucket_range(b);
            (lo, hi, count)
        })
        .collect();
    let p99_ns = latency_quantile(&latency, 0.99);
    PhaseFn {
        name,
        calls,
        bytes,
        timed_calls,
        time_ns: (ticks * 1e9 / p.ticks_per_sec).round() as u64,
        p99_ns,
    }
}

/// A phase's functions' times brought within its wall time, each in the same proportion, as a
/// thread's are within its life (`summary::alloc_time_scale`): calls of a few nanoseconds timed
/// by two clock reads that cost as much can add up to more than the phase lasted.
fn within_wall(mut fns: Vec<PhaseFn>, wall_ns: u64) -> Vec<PhaseFn> {
    let total: u64 = fns.iter().map(|f| f.time_ns).fold(0, u64::saturating_add);
    if total > wall_ns {
        let scale = wall_ns as f64 / total as f64;
        for f in &mut fns {
            f.time_ns = (f.time_ns as f64 * scale).floor() as u64;
        }
    }
    fns
}

pub fn build(p: &Profile) -> PhaseReport {
    let snapshot =
        |seq: Option<u32>| seq.and_then(|s| p.heap_snapshots.iter().find(|h| h.seq == s).cloned());
    let mut phases: Vec<PhaseSummary> = p
        .phases
        .iter()
        .map(|r| PhaseSummary {
            name: r.name.clone(),
            label: r.name.clone(),
            tid: r.tid,
            depth: r.depth,
            begin_ns: r.begin_mono_ns.saturating_sub(p.process.start_mono_ns),
            end_ns: r.end_mono_ns.saturating_sub(p.process.start_mono_ns),
            fns: within_wall(
                (0..GROUPS.len()).map(|g| phase_fn(p, r, g)).collect(),
                r.end_mono_ns.saturating_sub(r.begin_mono_ns),
            ),
            heap_before: snapshot(r.heap_before),
            heap_after: snapshot(r.heap_after),
        })
        .collect();
    phases.sort_by_key(|ph| (ph.begin_ns, ph.depth));
    for i in 0..phases.len() {
        let same = |o: &PhaseSummary| {
            o.name == phases[i].name && o.tid == phases[i].tid && o.depth == phases[i].depth
        };
        if phases.iter().filter(|o| same(o)).count() > 1 {
            let k = phases[..=i].iter().filter(|o| same(o)).count();
            phases[i].label = format!("{} #{k}", phases[i].name);
        }
    }
    let flags = flag_slow_phases(&phases);
    PhaseReport {
        phases,
        snapshots: p.heap_snapshots.clone(),
        flags,
        start_mono_ns: p.process.start_mono_ns,
    }
}

fn flag_slow_phases(phases: &[PhaseSummary]) -> Vec<PhaseFlag> {
    let mut flags = Vec::new();
    for rule in &SLOWDOWN_RULES {
        let qualifies = |ph: &PhaseSummary| {
            ph.function(rule.function)
                .filter(|f| f.calls >= rule.min_calls && f.timed_calls >= rule.min_timed)
                .and_then(PhaseFn::mean_ns)
        };
        for ph in phases {
            let Some(mean) = qualifies(ph) else { continue };
            let baseline = phases
                .iter()
                .filter(|o| !std::ptr::eq(*o, ph) && o.depth == ph.depth && o.name == ph.name)
                .filter_map(|o| qualifies(o).map(|m| (m, o)))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((base_mean, base)) = baseline else {
                continue;
            };
            let ratio = mean / base_mean;
            if ratio < rule.ratio {
                continue;
            }
            let mut message = format!(
                "`{}` took {:.1}x longer per call in phase \"{}\" ({} per call) than in phase \"{}\" ({})",
                rule.function,
                ratio,
                ph.label,
                fmt_ns(mean),
                base.label,
                fmt_ns(base_mean)
            );
            if let Some(h) = &ph.heap_before {
                let _ = write!(
                    message,
                    "; {}",
                    heap_state_sentence(h, base.heap_before.as_ref())
                );
            }
            flags.push(PhaseFlag {
                phase: ph.label.clone(),
                baseline_phase: base.label.clone(),
                function: rule.function,
                ratio,
                message,
            });
        }
    }
    flags
}

/// What the heap held when a phase began, compared with the baseline phase's start.
fn heap_state_sentence(h: &HeapSnapshot, base: Option<&HeapSnapshot>) -> String {
    if !h.glibc {
        return "heap details are available for glibc's allocator only".to_string();
    }
    let mut s = format!(
        "when it began, {} free chunk(s) ({}) sat in the heap, {} of them ({}) in fast bins",
        fmt_count(h.all_free_chunks()),
        fmt_bytes(h.free_bytes),
        fmt_count(h.fastbin_chunks),
        fmt_bytes(h.fastbin_bytes)
    );
    if let Some(bin) = h
        .info
        .as_ref()
        .and_then(|i| i.bins.iter().max_by_key(|b| b.count))
    {
        let _ = write!(
            s,
            "; the fullest size class was {}-{} bytes with {} chunks",
            bin.min_bytes,
            bin.max_bytes,
            fmt_count(bin.count)
        );
    }
    if let Some(b) = base.filter(|b| b.glibc) {
        let _ = write!(
            s,
            " (versus {} free chunk(s), {}, when the baseline began)",
            fmt_count(b.all_free_chunks()),
            fmt_bytes(b.free_bytes)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{PhaseFn, within_wall};

    #[test]
    fn a_phases_allocator_time_is_within_its_wall_time() {
        let f = |name, time_ns| PhaseFn {
            name,
            time_ns,
            ..Default::default()
        };
        // Timed as 1,500 ns in a phase of 1,000: both functions in proportion.
        let fns = within_wall(vec![f("malloc", 900), f("free", 600)], 1_000);
        assert_eq!((fns[0].time_ns, fns[1].time_ns), (600, 400));
        // Within its wall: as timed.
        let fns = within_wall(vec![f("malloc", 300), f("free", 200)], 1_000);
        assert_eq!((fns[0].time_ns, fns[1].time_ns), (300, 200));
    }
}
