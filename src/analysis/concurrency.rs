//! Concurrency over time, from the kernel's per-thread figures (SCHED points: time on a CPU and
//! time runnable between two looks of the sampler): how many threads ran, and wanted to run, at
//! each moment against the CPUs; the effective utilization in the words other profilers use
//! (idle / poor / ok / ideal, and over); serial sections, load imbalance and oversubscription.
//! The thresholds are data: `concurrency.json` (docs/STATES.md says why they are where they are).

use super::states::{Category, StateReport};
use super::threads::ThreadId;
use crate::profile::Profile;
use crate::profile::format::THREAD_MAIN;
use crate::profile::samples::{SchedPoint, WaitKind};
use crate::symbols::Frame;
use serde::Deserialize;
use std::sync::OnceLock;

/// The thresholds, from `concurrency.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Thresholds {
    /// The shortest time bin, and the most bins a run is cut into.
    pub min_bin_ns: u64,
    pub max_bins: usize,
    /// Utilization classes by threads wanting a CPU (D): idle below `idle_below` threads; poor up
    /// to `poor_upto` x CPUs; ok up to `ok_upto` x CPUs; ideal above; over above CPUs +
    /// `over_margin` threads.
    pub idle_below: f64,
    pub poor_upto: f64,
    pub ok_upto: f64,
    pub over_margin: f64,
    /// A serial bin: `serial_from` <= D < `serial_below`, in a run where D >= `serial_below` for
    /// at least `parallel_share` of the wall time and `parallel_min_ns`.
    pub serial_from: f64,
    pub serial_below: f64,
    pub parallel_share: f64,
    pub parallel_min_ns: u64,
    /// Serial stretches shorter than this are not listed (start-up, polling jitter).
    pub min_section_ns: u64,
    /// Sibling threads: started after the group's first within `sibling_start_share` of its run
    /// (from its start to its last time on a CPU), at least `sibling_start_min_ns` and at most
    /// `sibling_start_ns`.
    pub sibling_start_share: f64,
    pub sibling_start_min_ns: u64,
    pub sibling_start_ns: u64,
    /// A thread counts in a group when it ran at least this share of the wall time, and at
    /// least `member_min_of_heaviest` of the time the group's busiest member ran.
    pub member_min_share: f64,
    pub member_min_of_heaviest: f64,
    /// Imbalance: the first member to finish did so at least this share of the phase (and
    /// `imbalance_min_ns`) before the last.
    pub imbalance_share: f64,
    pub imbalance_min_ns: u64,
    /// ... and the lagging member's work (`ThreadStates::work_ns`, else its CPU time) exceeds the
    /// members' mean by this share.
    pub work_excess: f64,
    /// Bins averaged together before the classes are counted.
    pub smooth_bins: usize,
}

static THRESHOLDS_TEXT: &str = include_str!("concurrency.json");

pub fn thresholds() -> &'static Thresholds {
    static T: OnceLock<Thresholds> = OnceLock::new();
    T.get_or_init(|| serde_json::from_str(THRESHOLDS_TEXT).expect("concurrency.json is valid"))
}

/// One time bin: threads on a CPU (C), threads runnable (R), threads alive, averaged over it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Bin {
    pub running: f64,
    pub runnable: f64,
    pub alive: f64,
    /// Threads waiting for a lock (their sampled lock state), at most the threads alive and
    /// neither on a CPU nor runnable: they want to run as soon as the holder lets them.
    pub lock_waiting: f64,
}

impl Bin {
    /// Threads that wanted a CPU (what the program offered).
    pub fn wanting(&self) -> f64 {
        // At most the threads alive: a run-queue wait is placed by estimate (see `build`).
        (self.running + self.runnable).min(self.alive.max(self.running))
    }
}

/// Shares of wall time in each utilization class.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Utilization {
    pub idle: f64,
    pub poor: f64,
    pub ok: f64,
    pub ideal: f64,
    /// More threads wanted a CPU than there were (a part of `ideal`).
    pub over: f64,
    /// Mean threads over the run.
    pub mean: f64,
}

impl Utilization {
    /// The class that holds most of the time, in VTune's words.
    pub fn verdict(&self) -> &'static str {
        let classes = [
            (self.ideal, "ideal"),
            (self.ok, "ok"),
            (self.poor, "poor"),
            (self.idle, "idle"),
        ];
        classes
            .iter()
            .fold(
                (f64::MIN, "idle"),
                |best, c| if c.0 > best.0 { *c } else { best },
            )
            .1
    }
}

/// A stretch where one thread ran while the others did not exist yet, had ended, or waited for
/// it (not for input from outside).
#[derive(Debug, Clone)]
pub struct SerialSection {
    /// ns from the process's start.
    pub begin_ns: u64,
    pub end_ns: u64,
    /// The thread that ran most in it (index into the thread lists), and its user frame.
    pub thread: Option<usize>,
    pub user_frame: Option<Frame>,
}

impl SerialSection {
    /// The thread that ran (its `ThreadId::label`) and where ("function (file:line)"), "?" when unknown:
    /// the words every view gives a serial section.
    pub fn who_and_where(&self, states: Option<&StateReport>) -> (String, String) {
        let who = self
            .thread
            .and_then(|i| states.and_then(|r| r.threads.get(i)))
            .map_or_else(|| "?".to_string(), |t| ThreadId::of_states(t).label());
        let frame = self
            .user_frame
            .as_ref()
            .map_or_else(|| "?".to_string(), |f| f.display());
        (who, frame)
    }
}

/// Sibling threads that did not finish together.
#[derive(Debug, Clone)]
pub struct Imbalance {
    /// The members (thread indexes), the group's start and the ideal end (all work spread
    /// evenly over min(members, CPUs)), ns from the process's start.
    pub members: Vec<usize>,
    pub start_ns: u64,
    pub ideal_end_ns: u64,
    /// Each member's finish (its last time on a CPU), and the last.
    pub finish_ns: Vec<u64>,
    pub last_end_ns: u64,
    /// The member that finished last, and its user frame.
    pub lagging: usize,
    pub user_frame: Option<Frame>,
    /// Members' time between their finish and the last finish, summed.
    pub idle_ns: u64,
    /// The lagging member's time on a CPU and the other members' mean: the same work on a
    /// slower CPU takes more of it too, so this says "more CPU time", not "more work".
    pub lagging_exec_ns: u64,
    pub others_exec_ns: u64,
}

impl Imbalance {
    /// Wall time the last finish lies beyond the ideal end.
    pub fn excess_ns(&self) -> u64 {
        self.last_end_ns.saturating_sub(self.ideal_end_ns)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Concurrency {
    pub cpus: u32,
    pub bin_ns: u64,
    pub bins: Vec<Bin>,
    /// Threads on a CPU per bin as the kernel's figures place it, before the bins are averaged
    /// over `smooth_bins` (which takes in a stretch's neighbours).
    pub running_unsmoothed: Vec<f64>,
    /// By threads wanting a CPU (offered) and by threads on one (achieved).
    pub offered: Utilization,
    pub achieved: Utilization,
    /// Wall time with more threads wanting a CPU than CPUs (+ margin).
    pub over_ns: u64,
    /// Runnable time caused by the program's own threads outnumbering the CPUs, and the rest
    /// (other load on the machine).
    pub own_runnable_ns: u64,
    pub other_runnable_ns: u64,
    /// The most threads wanting a CPU in one bin.
    pub peak_wanting: f64,
    /// Wall time with at least two threads wanting a CPU.
    pub parallel_ns: u64,
    pub serial: Vec<SerialSection>,
    /// A run that ran in parallel too briefly for serial sections (under `parallel_share` or
    /// `parallel_min_ns`): its stretches with one thread wanting a CPU, found as `serial` would
    /// be (the mostly-serial finding reads them). Empty when `serial` applies.
    pub lone: Vec<SerialSection>,
    pub imbalance: Option<Imbalance>,
}

impl Concurrency {
    /// The CPU demand in words, the same in every view: the class of threads wanting a CPU, and,
    /// where the threads on a CPU fell in another class, that class and who held the CPUs (a run
    /// that wanted both CPUs and got one is not "ideal" alone).
    pub fn demand(&self) -> String {
        let (offered, achieved) = (self.offered.verdict(), self.achieved.verdict());
        if offered == achieved {
            return offered.to_string();
        }
        let rank = |v: &str| ["idle", "poor", "ok", "ideal"].iter().position(|c| *c == v);
        let held = if rank(achieved) >= rank(offered)
            || self.own_runnable_ns + self.other_runnable_ns == 0
        {
            ""
        } else if self.other_runnable_ns >= self.own_runnable_ns {
            ": other processes held the CPUs"
        } else {
            ": its own threads outnumbered the CPUs"
        };
        format!("{offered} wanted, {achieved} on a CPU{held}")
    }

    pub fn serial_ns(&self) -> u64 {
        self.serial.iter().map(|s| s.end_ns - s.begin_ns).sum()
    }

    /// The summed length of the `lone` stretches.
    pub fn lone_ns(&self) -> u64 {
        self.lone.iter().map(|s| s.end_ns - s.begin_ns).sum()
    }

    pub fn wall_ns(&self) -> u64 {
        self.bin_ns * self.bins.len() as u64
    }

    /// The wall time in [begin, end) (ns from the start) the program left its CPUs free, in
    /// whole CPUs: each bin's CPUs that no thread of it wanted, over the CPUs, times the bin's
    /// part of the stretch. What spreading work over the free CPUs there could have saved at
    /// most: nothing where other threads of the program kept them busy.
    pub fn free_ns(&self, begin: u64, end: u64) -> u64 {
        let (bin, p) = (self.bin_ns.max(1), self.cpus.max(1) as f64);
        let free: f64 = self
            .bins
            .iter()
            .enumerate()
            .skip((begin / bin) as usize)
            .take_while(|(i, _)| (*i as u64) * bin < end)
            .map(|(i, b)| {
                let (lo, hi) = ((i as u64 * bin).max(begin), ((i as u64 + 1) * bin).min(end));
                (p - b.wanting()).clamp(0.0, p) / p * hi.saturating_sub(lo) as f64
            })
            .sum();
        (free as u64).min(end.saturating_sub(begin))
    }

    /// The threads' time on a CPU in [begin, end) (ns from the start; bin edges), at most the
    /// stretch's length.
    pub fn running_ns(&self, begin: u64, end: u64) -> u64 {
        let bin = self.bin_ns.max(1);
        let on_cpu: f64 = self
            .running_unsmoothed
            .iter()
            .enumerate()
            .skip((begin / bin) as usize)
            .take_while(|(i, _)| (*i as u64) * bin < end)
            .map(|(_, r)| r * bin as f64)
            .sum();
        (on_cpu as u64).min(end.saturating_sub(begin))
    }
}

/// Adds `value` spread evenly over [begin, end) (ns from the start) to the bins it overlaps, as
/// a mean over each bin.
fn spread(
    bins: &mut [Bin],
    bin_ns: u64,
    begin: u64,
    end: u64,
    value: u64,
    field: fn(&mut Bin) -> &mut f64,
) {
    if end <= begin || bins.is_empty() {
        return;
    }
    let span = (end - begin) as f64;
    let mut t = begin;
    while t < end {
        let i = (t / bin_ns) as usize;
        if i >= bins.len() {
            break;
        }
        let bin_end = ((i as u64 + 1) * bin_ns).min(end);
        let part = bin_end - t;
        *field(&mut bins[i]) += value as f64 * part as f64 / span / bin_ns as f64;
        t = bin_end;
    }
}

/// One look of the sampler at a thread (ns from the start): what the kernel's figures grew by
/// since the thread's previous look (the first: since its start).
#[derive(Debug, Clone, Copy)]
struct Look {
    at: u64,
    exec_ns: u64,
    run_delay_ns: u64,
}

/// One thread's time on a CPU and runnable, as means over `bins` (the first begins at `base`),
/// from its looks in order. A thread wants one CPU at most: its two figures together never pass
/// 1 in a bin. The kernel's figures come in lumps (a run-queue wait is added when it ends, and
/// the figures are read a little after the look's time), so placed as they come a thread's
/// figures overlapped by up to two fifths between looks on a loaded machine, and two threads
/// computing on two CPUs read as three wanting one.
fn thread_bins(
    bins: &mut [Bin],
    base: u64,
    bin_ns: u64,
    thread_start: u64,
    looks: impl Iterator<Item = Look>,
) {
    let mut last = thread_start;
    for l in looks {
        let at = l.at.max(base);
        let from = last.clamp(base, at);
        spread(
            bins,
            bin_ns,
            from - base,
            at - base,
            l.exec_ns.min(at - from),
            |b| &mut b.running,
        );
        // The kernel adds a run-queue wait to the figure when the wait ends (the thread gets a
        // CPU): a thread kept waiting through several looks shows nothing, then all of it. The
        // wait lay just before its time on a CPU.
        let wait_from = at
            .saturating_sub(l.exec_ns.saturating_add(l.run_delay_ns))
            .max(thread_start.max(base))
            .min(from);
        spread(
            bins,
            bin_ns,
            wait_from - base,
            at - base,
            l.run_delay_ns.min(at - wait_from),
            |b| &mut b.runnable,
        );
        last = at;
    }
    for b in bins {
        b.running = b.running.min(1.0);
        b.runnable = b.runnable.min(1.0 - b.running);
    }
}

pub fn build(
    profile: &Profile,
    states: &StateReport,
    words: &super::futex::Words,
) -> Option<Concurrency> {
    if profile.sched.is_empty() {
        return None;
    }
    let th = thresholds();
    let start = profile.process.start_mono_ns;
    let wall = profile.wall_ns().max(1);
    let bin_ns = th.min_bin_ns.max(wall.div_ceil(th.max_bins as u64));
    let nbins = wall.div_ceil(bin_ns) as usize;
    let mut bins = vec![Bin::default(); nbins];
    let index: std::collections::HashMap<u32, usize> = profile
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.serial, i))
        .collect();
    let mut points: Vec<Vec<&SchedPoint>> = vec![Vec::new(); profile.threads.len()];
    for p in &profile.sched {
        if let Some(&ti) = index.get(&p.serial) {
            points[ti].push(p);
        }
    }
    let mut exec: Vec<u64> = vec![0; profile.threads.len()];
    let mut delay: Vec<u64> = vec![0; profile.threads.len()];
    // The last point with time on a CPU (from the thread's start when none has).
    let mut last_exec: Vec<u64> = profile
        .threads
        .iter()
        .map(|t| t.start_mono_ns.saturating_sub(start))
        .collect();
    for (ti, points) in points.iter().enumerate() {
        let thread_start = profile.threads[ti].start_mono_ns.saturating_sub(start);
        for p in points {
            exec[ti] += p.exec_ns;
            delay[ti] += p.run_delay_ns;
            if p.exec_ns > bin_ns / 20 {
                last_exec[ti] = p.mono_ns.saturating_sub(start);
            }
        }
        let Some(last) = points.last() else {
            continue;
        };
        let lo = (thread_start / bin_ns) as usize;
        let hi = ((last.mono_ns.saturating_sub(start) / bin_ns) as usize).min(nbins - 1);
        if lo > hi {
            continue;
        }
        let base = lo as u64 * bin_ns;
        let mut own = vec![Bin::default(); hi - lo + 1];
        let place = points.iter().map(|p| Look {
            at: p.mono_ns.saturating_sub(start),
            exec_ns: p.exec_ns,
            run_delay_ns: p.run_delay_ns,
        });
        thread_bins(&mut own, base, bin_ns, thread_start, place);
        for (b, o) in bins[lo..=hi].iter_mut().zip(&own) {
            b.running += o.running;
            b.runnable += o.runnable;
        }
    }
    for t in &profile.threads {
        let end = profile.thread_end_ns(t).saturating_sub(start);
        let begin = t.start_mono_ns.saturating_sub(start);
        let width = match t.folded {
            Some(f) => f.life_ns,
            None => end.saturating_sub(begin),
        };
        spread(&mut bins, bin_ns, begin, end.max(begin + 1), width, |b| {
            &mut b.alive
        });
    }
    // Threads waiting for a lock want to run: while one thread holds it and the others wait for
    // it, the stretch is the lock's cost, not one thread running alone (two threads taking
    // glibc's timezone lock in turn had read "HIGH Serial section: 56.6% of the wall time one
    // thread ran alone", ranked above the lock's own finding).
    for t in &states.threads {
        for &(b, e, category) in &t.runs {
            let e = e.min(wall);
            if category == Category::Lock && e > b {
                spread(&mut bins, bin_ns, b, e, e - b, |b| &mut b.lock_waiting);
            }
        }
    }
    // And where the interposer recorded it: lock waits shorter than the sampling interval are
    // seldom sampled (two Rust threads taking turns on stdout's lock waited 16 us at a time, 0.64
    // threads on average, and read as one thread running alone). A wait both sources saw is
    // counted twice here; the bound below keeps a bin to the threads alive and not running.
    for w in &profile.waits {
        let on_a_lock = match w.kind {
            WaitKind::Lock => true,
            WaitKind::Futex => words
                .get(w.object)
                .is_some_and(|x| x.role == super::runtime::Role::Lock),
            _ => false,
        };
        let (b, e) = (
            w.start_mono_ns.saturating_sub(start),
            w.end_mono_ns.saturating_sub(start).min(wall),
        );
        if on_a_lock && e > b {
            spread(&mut bins, bin_ns, b, e, e - b, |b| &mut b.lock_waiting);
        }
    }
    for b in &mut bins {
        b.lock_waiting = b
            .lock_waiting
            .min((b.alive.max(b.running) - b.running - b.runnable).max(0.0));
    }

    // Averaged over a window: the kernel's figures arrive in lumps (a look may find a thread
    // mid-wait), and what matters is tens of milliseconds and more.
    let running_unsmoothed = bins.iter().map(|b| b.running).collect();
    let bins = smooth(&bins, th.smooth_bins);
    let cpus = profile.process.ncpus.max(1);
    let p = cpus as f64;
    let classify = |value: fn(&Bin) -> f64| {
        let mut u = Utilization::default();
        for b in &bins {
            let d = value(b);
            let class = if d < th.idle_below {
                &mut u.idle
            } else if d <= th.poor_upto * p {
                &mut u.poor
            } else if d <= th.ok_upto * p {
                &mut u.ok
            } else {
                &mut u.ideal
            };
            *class += 1.0;
            if d > p + th.over_margin {
                u.over += 1.0;
            }
            u.mean += d;
        }
        let n = bins.len().max(1) as f64;
        for v in [
            &mut u.idle,
            &mut u.poor,
            &mut u.ok,
            &mut u.ideal,
            &mut u.over,
            &mut u.mean,
        ] {
            *v /= n;
        }
        u
    };
    let offered = classify(Bin::wanting);
    let achieved = classify(|b| b.running);
    let mut own = 0.0;
    let (mut over_ns, mut parallel_ns) = (0u64, 0u64);
    let mut peak: f64 = 0.0;
    for (i, b) in bins.iter().enumerate() {
        // The last bin ends with the run: times summed over bins stay within the wall time.
        let len = bin_ns.min(wall.saturating_sub(i as u64 * bin_ns));
        let d = b.wanting();
        own += b.runnable.min((d - p).max(0.0)) * bin_ns as f64;
        over_ns += if d > p + th.over_margin { len } else { 0 };
        parallel_ns += if d >= th.serial_below { len } else { 0 };
        peak = peak.max(d);
    }
    let total_delay: u64 = delay.iter().sum();
    let own_runnable_ns = (own as u64).min(total_delay);

    let mut c = Concurrency {
        cpus,
        bin_ns,
        offered,
        achieved,
        over_ns,
        own_runnable_ns,
        other_runnable_ns: total_delay - own_runnable_ns,
        peak_wanting: peak,
        parallel_ns,
        serial: Vec::new(),
        lone: Vec::new(),
        imbalance: None,
        bins,
        running_unsmoothed,
    };
    // Each thread's looks (ns from the start, time on a CPU since the last), by its position in
    // the states.
    let looks: Vec<Vec<(u64, u64)>> = states
        .threads
        .iter()
        .map(|t| {
            index.get(&t.serial).map_or_else(Vec::new, |&ti| {
                points[ti]
                    .iter()
                    .map(|p| (p.mono_ns.saturating_sub(start), p.exec_ns))
                    .collect()
            })
        })
        .collect();
    let finish = sibling_finish(profile, states, th, wall, &exec, &delay, &last_exec, cpus);
    let parallel = c.parallel_ns;
    if (parallel as f64) < th.parallel_share * wall as f64 || parallel < th.parallel_min_ns {
        // A program that never runs in parallel (long enough) has no serial section; its
        // stretches of one thread are the mostly-serial finding's.
        c.lone = serial_sections(&c, states, &looks, th, wall);
    } else {
        c.serial = serial_sections(&c, states, &looks, th, wall);
    }
    if let Some(f) = finish {
        // The stretch where siblings had finished and one still ran is the imbalance's, or, when
        // the last one did no more work but waited longer for a CPU, other load's: not a serial
        // part of the program either way (two equal workers, one of them kept off a CPU for a
        // while by other load, had read "Serial section: 24.9% of the wall time").
        let outside =
            |s: &SerialSection| s.end_ns <= f.first_end || s.begin_ns >= f.last_end + c.bin_ns;
        c.serial.retain(outside);
        c.lone.retain(outside);
        c.imbalance = f.imbalance;
    }
    Some(c)
}

fn smooth(bins: &[Bin], width: usize) -> Vec<Bin> {
    let half = width / 2;
    (0..bins.len())
        .map(|i| {
            let (lo, hi) = (i.saturating_sub(half), (i + half + 1).min(bins.len()));
            let n = (hi - lo) as f64;
            let mut b = Bin::default();
            for x in &bins[lo..hi] {
                b.running += x.running / n;
                b.runnable += x.runnable / n;
                b.alive += x.alive / n;
                b.lock_waiting += x.lock_waiting / n;
            }
            b
        })
        .collect()
}

/// The stretches of at least `min_section_ns` in which one thread wanted a CPU, and no other
/// waited for a lock (its holder's run is then the lock's cost).
fn serial_sections(
    c: &Concurrency,
    states: &StateReport,
    looks: &[Vec<(u64, u64)>],
    th: &Thresholds,
    wall: u64,
) -> Vec<SerialSection> {
    // Threads alive in [b, e) that wait for input from outside meanwhile: the stretch is not
    // serial then (a server whose other threads wait for clients).
    let input_wait = |b: u64, e: u64| {
        states
            .threads
            .iter()
            .any(|t| t.input_waits.iter().any(|&(wb, we)| wb < e && we > b))
    };
    let mut out = Vec::new();
    let mut run: Option<u64> = None;
    let n = c.bins.len();
    for i in 0..=n {
        let serial = i < n && {
            let b = &c.bins[i];
            let d = b.wanting();
            d >= th.serial_from && d + b.lock_waiting < th.serial_below
        };
        match (serial, run) {
            (true, None) => run = Some(i as u64 * c.bin_ns),
            (false, Some(b)) => {
                let e = (i as u64 * c.bin_ns).min(wall);
                run = None;
                if e - b < th.min_section_ns || input_wait(b, e) {
                    continue;
                }
                // A stretch in which the running threads mostly ran stallscope's own work (a heap
                // snapshot walking the heap) is the profiler's, not a serial section of the program.
                let (cpu, own) = (0..states.threads.len())
                    .map(|ti| states.cpu_in(ti, b, e))
                    .fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
                if own * 2 > cpu {
                    continue;
                }
                // The thread that ran most in the stretch, by the kernel's figures (a thread
                // that blocks signals has no CPU samples: xz's worker ran 11.5 s of a stretch
                // that was said to be its main thread's, which ran 6 ms of it), else by its CPU
                // samples; its user frame by its CPU samples.
                let ran_in = |ti: usize| {
                    looks.get(ti).map_or(0, |l| {
                        l.iter()
                            .filter(|&&(at, _)| at > b && at <= e)
                            .map(|&(_, exec)| exec)
                            .sum::<u64>()
                    })
                };
                let by_kernel = (0..states.threads.len())
                    .map(|ti| (ran_in(ti), ti))
                    .max()
                    .filter(|&(ran, _)| ran > 0)
                    .map(|(_, ti)| ti);
                let best = match by_kernel {
                    Some(ti) => Some((ti, states.top_user_frame(ti, b, e).map(|x| x.0))),
                    None => (0..states.threads.len())
                        .filter_map(|ti| Some((ti, states.top_user_frame(ti, b, e)?)))
                        .max_by(|x, y| x.1.1.cmp(&y.1.1).then(y.0.cmp(&x.0)))
                        .map(|(ti, (f, _))| (ti, Some(f))),
                };
                out.push(SerialSection {
                    begin_ns: b,
                    end_ns: e,
                    thread: best.as_ref().map(|x| x.0),
                    user_frame: best.and_then(|x| x.1),
                });
            }
            _ => {}
        }
    }
    out
}

/// The sibling workers among `candidates` (thread index, start, last time on a CPU; ns from the
/// process's start; by start): the largest set of threads started together, each within a share
/// of the first one's run after it (`Thresholds::sibling_start_share`). A thread started once
/// another was well into its work is not its sibling but work handed on: rustc's compiler thread
/// and an LLVM worker it started 40 ms into its 84 ms had read "load imbalance" between the two.
/// Of equal sets, the earliest.
fn sibling_group(candidates: &[(usize, u64, u64)], th: &Thresholds) -> Vec<usize> {
    let mut best: &[(usize, u64, u64)] = &[];
    for (k, &(_, start, finish)) in candidates.iter().enumerate() {
        let run = finish.saturating_sub(start) as f64;
        let window = ((run * th.sibling_start_share) as u64).clamp(
            th.sibling_start_min_ns,
            th.sibling_start_ns.max(th.sibling_start_min_ns),
        );
        let n = candidates[k..]
            .iter()
            .take_while(|c| c.1.saturating_sub(start) <= window)
            .count();
        if n > best.len() {
            best = &candidates[k..k + n];
        }
    }
    best.iter().map(|c| c.0).collect()
}

/// The members of a sibling group that took a share of its work: each on a CPU for at least
/// `member_min_of_heaviest` of the busiest member's time (`exec`, by thread index). A thread
/// started beside the workers that ran a sliver of what they ran is a helper (zstd -T1's reader
/// thread: 4.5-7.1 ms on a CPU beside the compressing thread's 94-112 ms), not a sibling that
/// finished its share early: the one that ran on worked alone, which `blame` and the serial
/// sections name. Even a split of 4:1 leaves the lighter share a quarter of the heavier.
fn sharing_members(group: &[usize], exec: &[u64], th: &Thresholds) -> Vec<usize> {
    let heaviest = group.iter().map(|&i| exec[i]).max().unwrap_or(0);
    group
        .iter()
        .copied()
        .filter(|&i| exec[i] as f64 >= th.member_min_of_heaviest * heaviest as f64)
        .collect()
}

/// How a group of sibling workers finished, where the first ended well before the last: that
/// stretch, and the imbalance when the last one did more work than the others (else it was kept
/// off the CPUs by other load).
struct SiblingFinish {
    first_end: u64,
    last_end: u64,
    imbalance: Option<Imbalance>,
}

#[allow(clippy::too_many_arguments)]
fn sibling_finish(
    profile: &Profile,
    states: &StateReport,
    th: &Thresholds,
    wall: u64,
    exec: &[u64],
    delay: &[u64],
    last_exec: &[u64],
    cpus: u32,
) -> Option<SiblingFinish> {
    let start = profile.process.start_mono_ns;
    // Sibling workers: threads other than main that ran a fair share, started close together.
    let mut members: Vec<usize> = (0..profile.threads.len())
        .filter(|&i| {
            let t = &profile.threads[i];
            t.flags & THREAD_MAIN == 0
                && t.folded.is_none()
                && exec[i] as f64 >= th.member_min_share * wall as f64
        })
        .collect();
    members.sort_by_key(|&i| profile.threads[i].start_mono_ns);
    let candidates: Vec<(usize, u64, u64)> = members
        .iter()
        .map(|&i| {
            let begin = profile.threads[i].start_mono_ns.saturating_sub(start);
            (i, begin, last_exec[i].max(begin))
        })
        .collect();
    let members = sharing_members(&sibling_group(&candidates, th), exec, th);
    if members.len() < 2 {
        return None;
    }
    let group_start = profile.threads[members[0]]
        .start_mono_ns
        .saturating_sub(start);
    let work: u64 = members.iter().map(|&i| exec[i] + delay[i]).sum();
    let width = (members.len() as u64).min(cpus.max(1) as u64);
    let ideal_end = group_start + work / width;
    let finish: Vec<u64> = members.iter().map(|&i| last_exec[i]).collect();
    let (&last_end, &first_end) = (finish.iter().max()?, finish.iter().min()?);
    let phase = last_end.saturating_sub(group_start);
    let early = last_end - first_end;
    if (early as f64) < th.imbalance_share * phase as f64 || early < th.imbalance_min_ns {
        return None;
    }
    let lag_pos = finish.iter().position(|&f| f == last_end)?;
    let lagging = members[lag_pos];
    // Uneven work, not uneven luck with the CPUs: the lagging member did more work. Its work
    // from its sampled states where every member has them (time spinning or waiting for a lock
    // on a CPU is not work: 16 threads taking turns on a spin lock end at different times, the
    // last having spun longest), else its time on a CPU.
    let sampled_work: Option<Vec<u64>> = members
        .iter()
        .map(|&i| {
            let t = states.threads.get(i).filter(|t| t.sampled_ns() > 0)?;
            Some(t.work_ns())
        })
        .collect();
    let work = sampled_work.unwrap_or_else(|| members.iter().map(|&i| exec[i]).collect());
    let mean_work = work.iter().sum::<u64>() as f64 / members.len() as f64;
    // The mean of a per-thread figure over the members other than the lagging one.
    let others_mean = |v: &[u64]| {
        members
            .iter()
            .filter(|&&i| i != lagging)
            .map(|&i| v[i])
            .sum::<u64>()
            / (members.len() as u64 - 1)
    };
    let others_exec = others_mean(exec);
    if (work[lag_pos] as f64) < (1.0 + th.work_excess) * mean_work {
        // Late for want of a CPU (its run delay beyond the others' covers half the lag): other
        // load's doing. Late otherwise (it slept longer): left to the serial sections.
        let others_delay = others_mean(delay);
        let starved = delay[lagging].saturating_sub(others_delay) as f64 >= 0.5 * early as f64;
        // Late for the lock it waited on longer than the others (its sampled lock state): the
        // lock's cost, not a serial part either (two threads taking glibc's timezone lock, the
        // one that lost it more often ran alone its last 235 ms, read as a medium serial section).
        let lock: Vec<u64> = (0..profile.threads.len())
            .map(|i| {
                states
                    .threads
                    .get(i)
                    .map_or(0, |t| t.ns[Category::Lock.index()])
            })
            .collect();
        let locked = lock[lagging].saturating_sub(others_mean(&lock)) as f64 >= 0.5 * early as f64;
        return (starved || locked).then_some(SiblingFinish {
            first_end,
            last_end,
            imbalance: None,
        });
    }
    let mean_wanted =
        members.iter().map(|&i| exec[i] + delay[i]).sum::<u64>() / members.len() as u64;
    let ideal_end = ideal_end
        .max(last_end.saturating_sub((exec[lagging] + delay[lagging]).saturating_sub(mean_wanted)));
    let user_frame = states
        .top_user_frame(lagging, group_start, last_end + 1)
        .map(|x| x.0);
    let imbalance = Some(Imbalance {
        idle_ns: finish.iter().map(|&f| last_end - f).sum(),
        members,
        start_ns: group_start,
        ideal_end_ns: ideal_end,
        finish_ns: finish,
        last_end_ns: last_end,
        lagging,
        user_frame,
        lagging_exec_ns: exec[lagging],
        others_exec_ns: others_exec,
    });
    Some(SiblingFinish {
        first_end,
        last_end,
        imbalance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A worker of tests/findings_programs/compute_threads.c beside other load on two CPUs: its
    /// looks (ms from the start: at, on a CPU, runnable) as the kernel gave them, with a wait
    /// added when it ended and one look of four taken while it ran.
    const LOADED_WORKER: [(f64, f64, f64); 16] = [
        (15.2, 5.9, 8.7),
        (25.2, 3.9, 0.0),
        (35.3, 4.0, 8.0),
        (45.4, 6.3, 8.0),
        (85.7, 35.0, 5.3),
        (95.8, 0.7, 9.3),
        (105.9, 6.1, 4.0),
        (116.0, 6.9, 3.2),
        (126.1, 5.5, 4.6),
        (136.2, 5.0, 5.0),
        (159.1, 20.4, 2.6),
        (169.2, 4.7, 3.3),
        (179.3, 0.2, 12.0),
        (189.4, 3.8, 0.0),
        (199.5, 7.4, 9.0),
        (209.6, 9.4, 0.7),
    ];

    #[test]
    fn a_thread_never_wants_more_than_one_cpu() {
        let ms = |x: f64| (x * MS as f64) as u64;
        let bin_ns = thresholds().min_bin_ns;
        let looks = LOADED_WORKER.iter().map(|&(at, exec, delay)| Look {
            at: ms(at),
            exec_ns: ms(exec),
            run_delay_ns: ms(delay),
        });
        let mut bins = vec![Bin::default(); 22];
        thread_bins(&mut bins, 0, bin_ns, ms(0.6), looks);
        for (i, b) in bins.iter().enumerate() {
            assert!(b.running + b.runnable <= 1.0 + 1e-9, "bin {i}: {b:?}");
        }
        // What the cap takes is the overlap, not the thread's work: its time on a CPU is all
        // there, and most of its wait.
        let placed = |f: fn(&Bin) -> f64| bins.iter().map(f).sum::<f64>() * bin_ns as f64;
        let exec: f64 = LOADED_WORKER.iter().map(|l| ms(l.1) as f64).sum();
        let delay: f64 = LOADED_WORKER.iter().map(|l| ms(l.2) as f64).sum();
        assert!((placed(|b| b.running) - exec).abs() < 0.01 * exec);
        let waited = placed(|b| b.runnable);
        assert!(
            waited <= delay && waited > 0.7 * delay,
            "{waited} of {delay}"
        );
    }

    /// Two threads on two CPUs for 1 s: the first runs throughout, the second runs every other
    /// 100 ms and in between waits (`waits`: for a lock, per its sampled states; else asleep).
    fn one_runs_while_the_other_waits(waits: Category) -> Option<Concurrency> {
        let (profile, states) = one_runs_while_the_other_waits_scene(waits);
        build(&profile, &states, &Default::default())
    }

    /// The second thread runs a tenth of a second, then waits one (sampled as `waits`) while the
    /// first runs throughout.
    fn one_runs_while_the_other_waits_scene(waits: Category) -> (Profile, StateReport) {
        let mut profile = Profile::default();
        profile.process.ncpus = 2;
        profile.last_mono_ns = 1000 * MS;
        for serial in [1, 2] {
            profile.threads.push(crate::profile::ThreadStats::quiet(
                serial,
                100 + serial,
                "w",
                0,
                1000 * MS,
            ));
        }
        let mut runs = Vec::new();
        for k in 1..=100u64 {
            let at = k * 10 * MS;
            let second_runs = ((at - 1) / (100 * MS)).is_multiple_of(2);
            for serial in [1, 2] {
                let exec_ns = if serial == 1 || second_runs {
                    10 * MS
                } else {
                    0
                };
                profile.sched.push(SchedPoint {
                    serial,
                    mono_ns: at,
                    exec_ns,
                    ..SchedPoint::default()
                });
            }
            let category = if second_runs {
                Category::Compute
            } else {
                waits
            };
            runs.push((at - 10 * MS, at, category));
        }
        let states = StateReport {
            threads: vec![
                super::super::states::ThreadStates {
                    serial: 1,
                    ..Default::default()
                },
                super::super::states::ThreadStates {
                    serial: 2,
                    runs,
                    ..Default::default()
                },
            ],
            ..StateReport::default()
        };
        (profile, states)
    }

    /// Lock waits too short to be sampled (the samples read the waiter asleep, or nothing) are
    /// still lock waits where the interposer recorded them: not a serial section either.
    #[test]
    fn recorded_lock_waits_keep_the_holders_run_from_being_serial() {
        let (mut profile, states) = one_runs_while_the_other_waits_scene(Category::Blocked);
        for k in 0..10u64 {
            let from = (100 + 200 * k) * MS;
            if from + 100 * MS > 1000 * MS {
                break;
            }
            profile.waits.push(crate::profile::samples::Wait {
                serial: 2,
                start_mono_ns: from,
                end_mono_ns: from + 100 * MS,
                object: 0x1000,
                other_tid: None,
                kind: WaitKind::Lock,
                lock_kind: None,
                notification: None,
                rewait: false,
                woken_before_end_ns: None,
            });
        }
        let c = build(&profile, &states, &Default::default()).unwrap();
        assert!(c.serial.is_empty(), "{:?}", c.serial);
        // The same waits on a condition variable's word leave the serial sections there.
        for w in &mut profile.waits {
            w.kind = WaitKind::Condition;
        }
        let c = build(&profile, &states, &Default::default()).unwrap();
        assert!(!c.serial.is_empty());
    }

    #[test]
    fn a_thread_waiting_for_a_lock_keeps_the_holders_run_from_being_serial() {
        let asleep = one_runs_while_the_other_waits(Category::Blocked).unwrap();
        assert!(!asleep.serial.is_empty(), "{:?}", asleep.serial);
        // Waiting for the lock the running thread holds (glibc's timezone lock taken in turn):
        // the lock's cost, not a serial section.
        let locked = one_runs_while_the_other_waits(Category::Lock).unwrap();
        assert!(locked.serial.is_empty(), "{:?}", locked.serial);
        assert!(locked.bins.iter().all(|b| b.lock_waiting <= 1.0 + 1e-9));
    }

    #[test]
    fn a_helper_that_ran_a_sliver_of_the_workers_time_takes_no_share() {
        let th = thresholds();
        // zstd -T1 (profiled on the 2-CPU test machine, four runs): the compressing thread
        // (index 1) and the reader started beside it (index 2), on a CPU 99.51 ms and 7.11 ms,
        // 96.71 and 4.45, 112.36 and 4.64, 94.13 and 5.02: one worker, not a split.
        for (worker, reader) in [(99.51, 7.11), (96.71, 4.45), (112.36, 4.64), (94.13, 5.02)] {
            let exec = [0, (worker * MS as f64) as u64, (reader * MS as f64) as u64];
            assert_eq!(sharing_members(&[1, 2], &exec, th), vec![1]);
        }
        // tests/cause_programs/imbalance.c: a split of 4:1 keeps both shares.
        let exec = [0, 400 * MS, 100 * MS, 100 * MS];
        assert_eq!(sharing_members(&[1, 2, 3], &exec, th), vec![1, 2, 3]);
    }

    #[test]
    fn a_thread_started_well_into_anothers_run_is_not_its_sibling() {
        let th = thresholds();
        // rustc: its compiler thread (3-87 ms) and an LLVM worker started 40 ms into it.
        assert!(sibling_group(&[(1, 3 * MS, 87 * MS), (5, 43 * MS, 53 * MS)], th).len() < 2);
        // Workers started together (thread creation one after the other) are siblings.
        let pool = [
            (1, 3 * MS, 90 * MS),
            (2, 4 * MS, 60 * MS),
            (3, 5 * MS, 91 * MS),
        ];
        assert_eq!(sibling_group(&pool, th), vec![1, 2, 3]);
        // A helper started first does not hide a pool started later, nor join it.
        let helper_then_pool = [
            (0, MS, 900 * MS),
            (4, 300 * MS, 500 * MS),
            (6, 301 * MS, 420 * MS),
            (7, 302 * MS, 480 * MS),
        ];
        assert_eq!(sibling_group(&helper_then_pool, th), vec![4, 6, 7]);
        // Short workers get the least window, long ones the most.
        assert_eq!(
            sibling_group(&[(1, 0, MS), (2, th.sibling_start_min_ns, 2 * MS)], th),
            vec![1, 2]
        );
        let late = th.sibling_start_ns + 1;
        assert!(sibling_group(&[(1, 0, 10_000 * MS), (2, late, 10_000 * MS)], th).len() < 2);
    }
}
