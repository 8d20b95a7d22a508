//! The thread-state samples one by one, each with its classified stack, its thread and the phase
//! it fell in: what the sampled exports (collapsed CPU/off-CPU stacks, pprof, speedscope), the
//! page's CPU and off-CPU flame graphs and `diff`'s CPU comparison read. States are never named
//! here: a view iterates over `states::CATEGORIES` and uses `Category::key()`, so a new state
//! reaches every view without changes.

use super::Analysis;
use super::phases::PhaseSummary;
use super::states::{CATEGORIES, Category, SampledStack, ThreadStates};
use crate::profile::samples::Sample;
use std::collections::HashMap;

/// What a sampled stack weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleWeight {
    /// CPU time: samples of a running thread.
    Cpu,
    /// All time, on and off the CPU.
    Wall,
    /// Off-CPU time: samples of a thread found not running.
    OffCpu,
    /// The time of one state.
    State(Category),
}

impl SampleWeight {
    /// The weights `--weight` accepts besides the allocator and lock ones: `cpu`, `wall`,
    /// `off-cpu` and every state's key.
    pub fn parse(s: &str) -> Option<SampleWeight> {
        match s {
            "cpu" => Some(SampleWeight::Cpu),
            "wall" => Some(SampleWeight::Wall),
            "off-cpu" => Some(SampleWeight::OffCpu),
            _ => CATEGORIES
                .iter()
                .find(|c| c.key() == s || c.key().replace('_', "-") == s)
                .map(|&c| SampleWeight::State(c)),
        }
    }

    pub fn name(self) -> String {
        match self {
            SampleWeight::Cpu => "cpu".into(),
            SampleWeight::Wall => "wall".into(),
            SampleWeight::OffCpu => "off-cpu".into(),
            SampleWeight::State(c) => c.key().into(),
        }
    }

    /// The nanoseconds sample `v` adds to this weight.
    pub fn of(self, v: &SampleView<'_>) -> u64 {
        let counts = match self {
            SampleWeight::Cpu => v.stack.on_cpu,
            SampleWeight::Wall => true,
            SampleWeight::OffCpu => !v.stack.on_cpu,
            SampleWeight::State(c) => v.stack.category == c,
        };
        if counts { v.sample.weight_ns } else { 0 }
    }
}

/// One sample with what the analysis knows of it.
#[derive(Debug, Clone, Copy)]
pub struct SampleView<'a> {
    pub sample: &'a Sample,
    pub stack: &'a SampledStack,
    /// The stack's index in `StateReport::stacks`.
    pub stack_index: u32,
    pub thread: &'a ThreadStates,
    /// The innermost phase of its thread that was open when it was taken.
    pub phase: Option<&'a PhaseSummary>,
    /// Its time, from the process's start (ns).
    pub at_ns: u64,
}

/// The state as a frame (`[lock]`), for exports that put it in the stack.
pub fn state_frame(c: Category) -> String {
    format!("[{}]", c.key())
}

/// Every sample of a known thread, in the profile's order (per thread, in time order).
pub fn samples(a: &Analysis) -> Vec<SampleView<'_>> {
    let Some(r) = &a.states else {
        return Vec::new();
    };
    let threads: HashMap<u32, &ThreadStates> = r.threads.iter().map(|t| (t.serial, t)).collect();
    let mut phases: HashMap<u32, Vec<&PhaseSummary>> = HashMap::new();
    for ph in &a.phases.phases {
        phases.entry(ph.tid).or_default().push(ph);
    }
    for list in phases.values_mut() {
        list.sort_by_key(|ph| (ph.begin_ns, ph.depth));
    }
    let start = a.profile.process.start_mono_ns;
    a.profile
        .samples
        .iter()
        .enumerate()
        .filter_map(|(si, sample)| {
            let (i, stack) = r.sample_stack(si)?;
            let thread = *threads.get(&sample.serial)?;
            let at_ns = sample.mono_ns.saturating_sub(start);
            let phase = phases.get(&thread.tid).and_then(|l| phase_at(l, at_ns));
            Some(SampleView {
                sample,
                stack,
                stack_index: i,
                thread,
                phase,
                at_ns,
            })
        })
        .collect()
}

/// The innermost phase of `list` (one thread's, by begin) open at `t`. Phases of a thread nest,
/// so it is the latest begun one that has not ended; a few steps back are enough.
fn phase_at<'a>(list: &[&'a PhaseSummary], t: u64) -> Option<&'a PhaseSummary> {
    let after = list.partition_point(|ph| ph.begin_ns <= t);
    list[..after]
        .iter()
        .rev()
        .take(64)
        .find(|ph| t <= ph.end_ns)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_is_a_weight_and_names_round_trip() {
        for c in CATEGORIES {
            let w = SampleWeight::parse(c.key()).unwrap();
            assert_eq!(w, SampleWeight::State(c));
            assert_eq!(SampleWeight::parse(&w.name()), Some(w));
        }
        for w in [SampleWeight::Cpu, SampleWeight::Wall, SampleWeight::OffCpu] {
            assert_eq!(SampleWeight::parse(&w.name()), Some(w));
        }
        assert_eq!(SampleWeight::parse("nonsense"), None);
    }

    #[test]
    fn the_innermost_open_phase_holds_a_sample() {
        let ph = |name: &str, begin, end, depth| PhaseSummary {
            name: name.into(),
            begin_ns: begin,
            end_ns: end,
            depth,
            ..Default::default()
        };
        let (outer, inner, later) = (
            ph("outer", 0, 100, 0),
            ph("inner", 10, 20, 1),
            ph("later", 200, 300, 0),
        );
        let list = vec![&outer, &inner, &later];
        assert_eq!(phase_at(&list, 15).map(|p| p.name.as_str()), Some("inner"));
        assert_eq!(phase_at(&list, 50).map(|p| p.name.as_str()), Some("outer"));
        assert!(phase_at(&list, 150).is_none());
        assert_eq!(phase_at(&list, 250).map(|p| p.name.as_str()), Some("later"));
    }
}
