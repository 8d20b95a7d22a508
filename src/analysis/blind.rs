//! The part of a run whose off-CPU states could not be read: a process that made itself
//! non-dumpable (a privilege drop such as `mariadbd --user=mysql`, or `prctl(PR_SET_DUMPABLE)`)
//! has its `/proc` files owned by root, so the sampler reads no system call for its threads, and
//! a wait's state is a guess. The report says so, and no finding rests on those states.

use crate::profile::Profile;
use crate::profile::samples::SampleKind;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Blindness {
    /// Thread time of the samples off a CPU whose system call could not be read.
    pub blind_ns: u64,
    /// Thread time of all samples off a CPU.
    pub off_cpu_ns: u64,
    /// When the first such sample was taken, ns from the process's start.
    pub from_ns: u64,
}

impl Blindness {
    /// The share of the off-CPU time whose state is unknown.
    pub fn share(&self) -> f64 {
        crate::util::ratio(self.blind_ns, self.off_cpu_ns)
    }
}

/// None when every sample off a CPU could be read.
pub fn of(profile: &Profile) -> Option<Blindness> {
    let start = profile.process.start_mono_ns;
    let mut b = Blindness::default();
    let mut from: Option<u64> = None;
    for s in profile
        .samples
        .iter()
        .filter(|s| s.kind == SampleKind::Wall)
    {
        b.off_cpu_ns = b.off_cpu_ns.saturating_add(s.weight_ns);
        if s.blind() {
            b.blind_ns = b.blind_ns.saturating_add(s.weight_ns);
            let at = s.mono_ns.saturating_sub(start);
            from = Some(from.map_or(at, |f| f.min(at)));
        }
    }
    from.map(|from_ns| Blindness { from_ns, ..b })
}
