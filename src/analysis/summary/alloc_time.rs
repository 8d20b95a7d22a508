//! The allocator's time: timed call durations scaled to all calls, each thread's factor capped by
//! its life, and the allocator's time on a CPU from the thread states' samples.

use super::*;

/// Scales a sampled duration to all calls.
pub(super) fn estimate(timed_ticks: u64, timed_calls: u64, calls: u64) -> f64 {
    if timed_calls == 0 {
        0.0
    } else {
        timed_ticks as f64 * calls as f64 / timed_calls as f64
    }
}

/// Per thread (in the profile's order), the factor that brings its estimated allocator time
/// within its life (1 where it is): the threads table caps each thread's time at its life, and
/// the functions' times, summed over the threads, are scaled by the same factor so that they add
/// up to the threads' figure.
pub(super) fn alloc_time_scales(p: &Profile) -> Vec<f64> {
    p.threads
        .iter()
        .map(|t| {
            let total: f64 = t.fns.iter().map(|f| f.estimated_ticks()).sum();
            let life = t.life_ns(p.thread_end_ns(t)) as f64 * p.ticks_per_sec / 1e9;
            if total > life && total > 0.0 {
                life / total
            } else {
                1.0
            }
        })
        .collect()
}

/// Per function (indexed like `FN_NAMES`), the factor its estimated time was scaled by in all
/// (`alloc_time_scales`, thread by thread): what the allocation sites' times of that function are
/// scaled by too, so that they stay in line with the functions table.
pub fn alloc_time_scale_by_function(p: &Profile) -> Vec<f64> {
    let scales = alloc_time_scales(p);
    (0..FN_NAMES.len())
        .map(|i| {
            let (mut raw, mut scaled) = (0.0f64, 0.0f64);
            for (t, scale) in p.threads.iter().zip(&scales) {
                let Some(f) = t.fns.get(i) else { continue };
                raw += f.estimated_ticks();
                scaled += f.estimated_ticks() * scale;
            }
            if raw > 0.0 { scaled / raw } else { 1.0 }
        })
        .collect()
}
/// Sets each thread's allocator time on a CPU (`alloc_cpu_ns`) from its states (`states`, in the
/// summary's thread order). A timed call lasts from its start to its end, so it includes the time
/// the thread waited for a CPU inside it and slept on an arena lock (16 threads on 2 CPUs: 62% of
/// the threads' CPU time in timed calls, 7% in the CPU samples). So a thread with CPU samples
/// takes its sampled allocator time (CPU samples in allocator frames, scaled to its CPU time;
/// waiting for a CPU is never in it). The samples must name functions to see the allocator: a
/// profile read without its modules' symbols, a thread that blocks the sampling signal, or no
/// sampling keep the calls' time.
///
/// Not the calls' time scaled by exec / (exec + run delay): that assumes preemption falls evenly
/// on the thread's code, and it does not (small_strings: 14.9% where the samples saw 48% and
/// callgrind counts 58% of instructions in operator new/delete).
///
/// Always at most the thread's CPU time: as a last guard, because a sampled estimate is scaled to
/// the kernel's figures and can differ from the CPU clock by a sample, and timed calls include
/// waits.
pub fn net_allocator_time(
    summary: &mut Summary,
    states: Option<&crate::analysis::states::StateReport>,
) {
    let Some(r) = states else { return };
    let named = r
        .threads
        .iter()
        .flat_map(|t| &t.sites)
        .any(|site| site.frames.iter().any(|f| f.function.is_some()));
    if r.sampling.cpu_hz == 0 || r.sampling.signal.is_none() || !named {
        return;
    }
    let states_of = crate::analysis::threads::by_serial(&r.threads, |t| t.serial);
    for t in summary.threads.iter_mut() {
        let Some(st) = states_of.get(&t.serial) else {
            continue;
        };
        if !st.signal_blocked && !st.cpu_marks.is_empty() {
            // Its CPU samples only: on 16 threads on 2 CPUs, the allocator state with its wall
            // samples (off a CPU inside malloc) had made one thread's allocator time 56-86 ms
            // against 46 ms of CPU time.
            t.alloc_cpu_ns = st.allocator_on_cpu_ns.min(t.cpu_ns);
            // Nor above the calls' own time where it was measured: time on a CPU inside the
            // calls cannot exceed their length. With a handful of CPU samples the sampled figure
            // is mostly noise (`as`, 4 samples: 15.6 ms on a CPU in calls that lasted 6.0 ms,
            // reported as 76.6% of its time, high).
            if t.alloc_ns > 0 {
                t.alloc_cpu_ns = t.alloc_cpu_ns.min(t.alloc_ns);
            }
            t.alloc_cpu_samples = st.cpu_marks.len() as u64;
        } else if let Some(k) = st.kernel {
            // No CPU sample of this thread (it blocks the signal, or its few were lost): its
            // calls' time less its share of run-queue delay, a rough estimate but bounded by
            // what the kernel says it waited (a thread at "100% of its CPU time" otherwise).
            let busy = k.exec_ns.saturating_add(k.run_delay_ns);
            let net = (t.alloc_ns as f64 * ratio(k.exec_ns, busy)).round() as u64;
            t.alloc_cpu_ns = net.min(t.cpu_ns);
        }
    }
    // The views show the time on a CPU once the samples measure a share at all (a short run's
    // dozen samples do not: 12 ms of work.c with 4 samples, none in the allocator, read "0 ns on
    // a CPU" for 420,007 calls); the findings say how many samples their share rests on.
    // Where no call was counted (an allocator bound before a ptrace attach loaded the hooks, or
    // one linked into the program), the calls' time is no figure at all: the samples' is the only
    // one, however few they are (a redis attach window: 5.7 ms on a CPU in the allocator read "0 calls, 0 ns inside").
    summary.alloc_on_cpu = summary.alloc_cpu_samples() >= ALLOC_ON_CPU_MIN_SAMPLES
        || (summary.alloc_calls() == 0 && summary.alloc_cpu_ns() > 0);
}

/// CPU samples from which the views give the allocator's time on a CPU rather than the calls'
/// timed length: at 20 a share of one half is known to about 11 points (binomial), and the
/// report says how many there were. (CPU-time timers tick with the kernel's clock, 250 Hz
/// here: 20 samples are about 80 ms of CPU time.)
pub const ALLOC_ON_CPU_MIN_SAMPLES: u64 = 20;

#[cfg(test)]
mod tests {
    use super::{ALLOC_ON_CPU_MIN_SAMPLES, Summary, ThreadSummary, net_allocator_time};
    use crate::analysis::states::{StateReport, StateSite, ThreadStates};
    use crate::profile::samples::SamplingInfo;
    use crate::symbols::Frame;

    /// A thread with `samples` CPU samples, `on_cpu_ns` of them in the allocator, and `calls`
    /// counted calls of `timed_ns`.
    fn thread_and_states(samples: usize, on_cpu_ns: u64, calls: u64) -> (Summary, StateReport) {
        let mut summary = Summary::default();
        summary.threads.push(ThreadSummary {
            serial: 1,
            cpu_ns: 100_000_000,
            alloc_ns: if calls > 0 { 50_000_000 } else { 0 },
            ..ThreadSummary::default()
        });
        summary.groups = vec![Default::default(); 5];
        summary.groups[0].calls = calls;
        let states = StateReport {
            sampling: SamplingInfo {
                cpu_hz: 250,
                signal: Some(27),
                ..Default::default()
            },
            threads: vec![ThreadStates {
                serial: 1,
                allocator_on_cpu_ns: on_cpu_ns,
                cpu_marks: vec![(0, 0, 0); samples],
                sites: vec![StateSite {
                    frames: vec![Frame {
                        function: Some("malloc".into()),
                        ..Frame::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        (summary, states)
    }

    /// No counted call (an allocator bound before a ptrace attach loaded the hooks): the samples'
    /// time is the allocator's figure however few they are, where counted calls keep their timed
    /// length until the samples are enough.
    #[test]
    fn samples_are_the_figure_where_no_call_was_counted() {
        let few = ALLOC_ON_CPU_MIN_SAMPLES as usize - 1;
        let (mut uncounted, states) = thread_and_states(few, 5_000_000, 0);
        net_allocator_time(&mut uncounted, Some(&states));
        assert!(uncounted.alloc_on_cpu);
        assert_eq!(uncounted.allocator_ns(), 5_000_000);
        let (mut counted, states) = thread_and_states(few, 5_000_000, 1_000);
        net_allocator_time(&mut counted, Some(&states));
        assert!(!counted.alloc_on_cpu);
        assert_eq!(counted.allocator_ns(), 50_000_000);
        // The views give the samples' figure beside the calls' (the findings take it).
        assert_eq!(counted.alloc_sampled_aside(), Some((0.05, few as u64)));
        assert_eq!(uncounted.alloc_sampled_aside(), None);
        let (mut none, states) = thread_and_states(few, 0, 0);
        net_allocator_time(&mut none, Some(&states));
        assert!(!none.alloc_on_cpu);
    }
}
