//! The kernel's figures and the timeline: sample weights scaled to the kernel's times, the
//! kernel's time added where no sample fell, time spread over slices, runs merged.

use super::*;

/// Adds `ns` of category `c` over the interval [end - ns, end) to the slices it overlaps.
pub(super) fn spread(
    slices: &mut [PerCategory<u64>],
    start: u64,
    slice_ns: u64,
    end: u64,
    ns: u64,
    c: Category,
) {
    let begin = end.saturating_sub(ns).max(start);
    let end = end.max(begin);
    if slice_ns == 0 || slices.is_empty() {
        return;
    }
    let mut t = begin;
    while t < end {
        let i = ((t - start) / slice_ns) as usize;
        if i >= slices.len() {
            break;
        }
        let slice_end = start.saturating_add((i as u64 + 1).saturating_mul(slice_ns));
        let part = end.min(slice_end) - t;
        if part == 0 {
            break; // the last slice ends at u64::MAX: nothing lies beyond it
        }
        slices[i][c.index()] = slices[i][c.index()].saturating_add(part);
        t += part;
    }
    if begin == end && ns > 0 {
        let i = (((begin - start) / slice_ns) as usize).min(slices.len() - 1);
        slices[i][c.index()] = slices[i][c.index()].saturating_add(ns);
    }
}
/// How one thread's sample weights are scaled: CPU samples to its time on a CPU, wall samples to
/// its time asleep, as the kernel counted them (1.0 each without kernel figures).
#[derive(Debug, Clone, Copy)]
pub(super) struct WeightScale {
    pub(super) cpu: f64,
    pub(super) wall: f64,
}

impl WeightScale {
    pub(super) fn weight(&self, s: &Sample) -> u64 {
        let f = match s.kind {
            SampleKind::Wall => self.wall,
            SampleKind::Cpu | SampleKind::Kernel => self.cpu,
        };
        (s.weight_ns as f64 * f).round() as u64
    }
}

/// Sums each thread's kernel figures (`ThreadStates::kernel`) and derives its weight scales.
pub(super) fn weight_scales(
    profile: &Profile,
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
) -> Vec<WeightScale> {
    let mut figures: Vec<Option<KernelFigures>> = vec![None; threads.len()];
    for p in &profile.sched {
        let Some(&ti) = index.get(&p.serial) else {
            continue;
        };
        let k = figures[ti].get_or_insert_with(KernelFigures::default);
        k.exec_ns = k.exec_ns.saturating_add(p.exec_ns);
        k.run_delay_ns = k.run_delay_ns.saturating_add(p.run_delay_ns);
        k.minflt = k.minflt.saturating_add(p.minflt.into());
        k.majflt = k.majflt.saturating_add(p.majflt.into());
        k.stime_ns = k.stime_ns.saturating_add(p.stime_ns);
        if p.minflt > 0 || p.majflt > 0 {
            k.fault_stime_ns = k.fault_stime_ns.saturating_add(p.stime_ns);
        }
        k.switches = k.switches.saturating_add(p.switches.into());
    }
    let mut sums = vec![(0u64, 0u64); threads.len()];
    for s in &profile.samples {
        if let Some(&ti) = index.get(&s.serial) {
            let sum = &mut sums[ti];
            match s.kind {
                SampleKind::Wall => sum.1 = sum.1.saturating_add(s.weight_ns),
                SampleKind::Cpu | SampleKind::Kernel => sum.0 = sum.0.saturating_add(s.weight_ns),
            }
        }
    }
    let cpu_ns: HashMap<u32, u64> = profile
        .threads
        .iter()
        .map(|t| (t.serial, t.cpu_ns))
        .collect();
    threads
        .iter_mut()
        .zip(figures)
        .zip(sums)
        .map(|((t, k), (cpu, wall))| {
            let Some(mut k) = k else {
                return WeightScale {
                    cpu: 1.0,
                    wall: 1.0,
                };
            };
            // The thread record's CPU time is read at its end: it includes the last stretch
            // after the sampler's last look.
            let exec = k
                .exec_ns
                .max(cpu_ns.get(&t.serial).copied().unwrap_or(0))
                .min(t.life_ns);
            k.exec_ns = exec;
            k.run_delay_ns = k.run_delay_ns.min(t.life_ns - exec);
            k.off_ns = t.life_ns - exec - k.run_delay_ns;
            t.kernel = Some(k);
            let factor = |target: u64, sampled: u64| {
                if sampled == 0 {
                    1.0
                } else {
                    target as f64 / sampled as f64
                }
            };
            WeightScale {
                cpu: factor(exec, cpu),
                wall: factor(k.off_ns, wall),
            }
        })
        .collect()
}

/// Adds what only the kernel's figures tell: the run-queue delay (`runnable`, or `spinning` for
/// a thread that mostly yields the CPU), the running time no CPU sample stands for (`compute`),
/// and the system time of page faults (`kernel_memory`, taken from `compute`, where memory
/// stores that fault are sampled).
pub(super) fn add_kernel_states(
    profile: &Profile,
    threads: &mut [ThreadStates],
    index: &HashMap<u32, usize>,
    kernel_signs: &KernelSigns,
    start_ns: u64,
    slice_ns: u64,
) {
    // The run-queue delay of each look, spread over the time since the thread's previous look.
    let mut last_look: Vec<Option<u64>> = vec![None; threads.len()];
    let starts: HashMap<u32, u64> = profile
        .threads
        .iter()
        .map(|t| (t.serial, t.start_mono_ns))
        .collect();
    for (ti, t) in threads.iter_mut().enumerate() {
        let Some(k) = t.kernel else { continue };
        let on_cpu = t.awake_ns();
        let yielding = kernel_signs.yield_ns[ti] * 2 > on_cpu && on_cpu > 0;
        let waiting = if yielding {
            Category::Spinning
        } else {
            Category::Runnable
        };
        // A thread no look ever found asleep: the kernel says it slept `off_ns`, in stretches
        // shorter than the looks (a lock taken and handed over many times a millisecond). Where
        // its CPU samples show what it waits for (the lock paths of a contended lock, I/O), the
        // sleep is that, in the same proportions; only without any such sign does it stay
        // runnable (the last stretch after the sampler's last look). Before, all of it was
        // runnable: 530 ms against Linux's 60 ms run delay for a worker on malloc's arena lock.
        let missed = if t.samples > 0 && kernel_signs.wall_seen[ti] == 0 {
            k.off_ns
        } else {
            0
        };
        let signs = [
            Category::Lock,
            Category::Io,
            Category::Blocked,
            Category::Idle,
        ];
        let shown: u64 = signs.iter().map(|c| t.ns[c.index()]).sum();
        let mut missed_runnable = missed;
        if missed > 0 && shown > 0 {
            let mut given = 0u64;
            for (i, c) in signs.iter().enumerate() {
                let part = if i + 1 == signs.len() {
                    missed - given
                } else {
                    (missed as u128 * t.ns[c.index()] as u128 / shown as u128) as u64
                };
                given += part;
                t.ns[c.index()] = t.ns[c.index()].saturating_add(part);
            }
            missed_runnable = 0;
        }
        t.ns[waiting.index()] =
            t.ns[waiting.index()].saturating_add(k.run_delay_ns + missed_runnable);
        // Page faults: system time the CPU samples saw as the user's own stores. System time the
        // samples explain otherwise (the kernel's work inside an I/O call or another system call,
        // such as the futex calls of a lock handed back and forth, or a sched_yield back-off:
        // TBB's spin_mutex) is not page faults. Before the other system calls counted, two
        // Python threads handing the GIL over had all their system time read as page faults
        // (2,500 faults, 730 ms).
        let compute = t.ns[Category::Compute.index()];
        let seen = t.ns[Category::KernelMemory.index()]
            + t.ns[Category::Io.index()]
            + kernel_signs.io_call_ns[ti]
            + kernel_signs.syscall_ns[ti]
            + kernel_signs.yield_ns[ti];
        let faults = k.fault_stime_ns.saturating_sub(seen).min(compute);
        if faults > 0 && compute > 0 {
            let share = faults as f64 / compute as f64;
            t.ns[Category::Compute.index()] -= faults;
            t.ns[Category::KernelMemory.index()] += faults;
            for slice in &mut t.slices {
                let moved = (slice[Category::Compute.index()] as f64 * share) as u64;
                slice[Category::Compute.index()] -= moved;
                slice[Category::KernelMemory.index()] += moved;
            }
        }
        // Running time without a CPU sample (sampling off, or a signal the thread blocks). A
        // thread whose CPU samples were all idle (a runtime's spinning worker) had them: its
        // running time counted twice, once idle and once computation, and its states summed to
        // 147% of its life.
        let unsampled = k.exec_ns.saturating_sub(on_cpu);
        if unsampled > k.exec_ns / 20 && on_cpu == 0 && t.cpu_marks.is_empty() {
            t.ns[Category::Compute.index()] += unsampled;
        }
        last_look[ti] = starts.get(&t.serial).copied();
    }
    for p in &profile.sched {
        let Some(&ti) = index.get(&p.serial) else {
            continue;
        };
        let t = &mut threads[ti];
        let Some(from) = last_look[ti] else { continue };
        last_look[ti] = Some(p.mono_ns);
        if p.run_delay_ns == 0 {
            continue;
        }
        let waiting = if t.ns[Category::Runnable.index()] > 0 {
            Category::Runnable
        } else {
            Category::Spinning
        };
        // Evenly over the span since the previous look (at most the span itself).
        let span = p.mono_ns.saturating_sub(from).max(1);
        let delay = p.run_delay_ns.min(span);
        spread_evenly(
            &mut t.slices,
            start_ns,
            slice_ns,
            from,
            p.mono_ns,
            delay,
            waiting,
        );
    }
    // A slice holds at most its own length: the kernel's waits are placed by estimate and the
    // samples' weights are scaled, so an overfull slice is scaled down.
    for t in threads.iter_mut().filter(|t| t.kernel.is_some()) {
        for slice in &mut t.slices {
            let total: u64 = slice.iter().sum();
            if total > slice_ns {
                let f = slice_ns as f64 / total as f64;
                for v in slice.iter_mut() {
                    *v = (*v as f64 * f) as u64;
                }
            }
        }
    }
}

/// Adds `ns` of category `c` spread evenly over [begin, end) to the slices it overlaps.
pub(super) fn spread_evenly(
    slices: &mut [PerCategory<u64>],
    start: u64,
    slice_ns: u64,
    begin: u64,
    end: u64,
    ns: u64,
    c: Category,
) {
    let begin = begin.max(start);
    if end <= begin || slice_ns == 0 {
        return;
    }
    let span = (end - begin) as f64;
    let mut t = begin;
    while t < end {
        let i = ((t - start) / slice_ns) as usize;
        if i >= slices.len() {
            break;
        }
        let slice_end = start
            .saturating_add((i as u64 + 1).saturating_mul(slice_ns))
            .min(end);
        let part = slice_end.saturating_sub(t);
        if part == 0 {
            break;
        }
        let add = (ns as f64 * part as f64 / span).round() as u64;
        slices[i][c.index()] = slices[i][c.index()].saturating_add(add);
        t += part;
    }
}

/// Joins intervals of the same category that touch or nearly touch (a CPU sample's interval is
/// its CPU time, so running stretches between samples leave small gaps).
pub(super) fn merge_runs(mut list: Vec<(u64, u64, Category)>) -> Vec<(u64, u64, Category)> {
    const GAP_NS: u64 = 2_000_000;
    list.sort_by_key(|r| (r.1, r.0));
    let mut out: Vec<(u64, u64, Category)> = Vec::new();
    for (begin, end, c) in list {
        match out.last_mut() {
            Some(last) if last.2 == c && begin <= last.1.saturating_add(GAP_NS) => {
                last.1 = last.1.max(end)
            }
            Some(last) if begin < last.1 => {
                // Overlaps another category's stretch: start where that one ended.
                let begin = last.1;
                if end > begin {
                    out.push((begin, end, c));
                }
            }
            _ => out.push((begin, end, c)),
        }
    }
    out
}

pub(super) fn peak_threads(profile: &Profile) -> usize {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for t in &profile.threads {
        let end = profile.thread_end_ns(t);
        // A folded group counts as its threads' mean concurrency over its span.
        let width = match t.folded {
            Some(f) => f
                .life_ns
                .div_ceil(end.saturating_sub(t.start_mono_ns).max(1))
                .max(1),
            None => 1,
        };
        let width = i32::try_from(width).unwrap_or(i32::MAX / 4);
        events.push((t.start_mono_ns, width));
        events.push((end, -width));
    }
    events.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut live, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        live += d;
        peak = peak.max(live);
    }
    peak.max(1) as usize
}
