//! Findings about how the threads' time is spent over the run (docs/STATES.md): serial
//! sections, load imbalance, spinning, oversubscription, waiting for a CPU, page faults and
//! malloc's arena lock. Each carries a stake: the wall time removing the cause could save, from
//! the concurrency figures, so the findings are ordered by what they are worth.

use super::rules::Rule;
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::concurrency::{Concurrency, SerialSection};
use crate::analysis::locknames::{is_arena_lock, is_arena_wait};
use crate::analysis::states::{Category, StateReport, ThreadStates};
use crate::analysis::threads::ThreadId;
use crate::symbols::Frame;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};

/// "up to 1.8x faster, estimated" for removing `stake` of `wall`.
pub fn speedup_words(wall: u64, stake: u64) -> String {
    // A cause never takes the whole run with it: what is left is at least 1% of the wall time
    // (a stake of nearly all of it had read "40177433530.00x faster").
    let left = wall.saturating_sub(stake).max(wall / 100).max(1);
    format!("up to {:.2}x faster, estimated", wall as f64 / left as f64)
}

pub(super) fn with_stake(mut f: Finding, a: &Analysis, stake: u64) -> Finding {
    let wall = a.states.as_ref().map_or(a.summary.wall_ns, |s| s.wall_ns);
    // Time saved is wall time: never more than the run lasted (summed thread time divided
    // wrongly had given 287 s of a 40 s run).
    let stake = if wall > 0 { stake.min(wall) } else { stake };
    f.stake_ns = Some(stake);
    f.evidence.insert(
        0,
        format!(
            "stake: {} of {} wall time ({})",
            fmt_ns(stake as f64),
            fmt_ns(wall as f64),
            speedup_words(wall, stake)
        ),
    );
    f
}

fn frame_words(f: Option<&Frame>) -> String {
    f.map_or_else(|| "an unknown frame".to_string(), Frame::display)
}

/// Threads that ran: on a CPU (or spinning) for at least `min_share` of the wall time.
fn working(r: &StateReport, min_share: f64) -> Vec<&ThreadStates> {
    r.threads
        .iter()
        .filter(|t| {
            (on_cpu(t) + t.ns[Category::Spinning.index()]) as f64 >= min_share * r.wall_ns as f64
        })
        .collect()
}

/// A thread's time on a CPU, by the states (everything but waiting, asleep or runnable).
fn on_cpu(t: &ThreadStates) -> u64 {
    t.awake_ns()
        .min(t.kernel.map_or(u64::MAX, |k| k.exec_ns.max(1)))
}

fn parts(a: &Analysis) -> Option<(&StateReport, &Concurrency)> {
    Some((a.states.as_ref()?, a.concurrency.as_ref()?))
}

pub fn serial_section(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((r, c)) = parts(a) else {
        return vec![];
    };
    // Threads taking turns on one object run one at a time by design: their turns are the
    // `taking-turns` finding's, which names the object, not serial sections of one of them.
    let turns_rule = super::rules::rules()
        .iter()
        .find(|x| x.detector == "taking_turns");
    let turn_takers = turns_rule
        .and_then(|tt| super::causes::taking_turns_group(tt, a))
        .map(|g| g.working)
        .unwrap_or_default();
    // Where no other thread works beside them, the program never ran in parallel: what looked
    // parallel was the turn-takers waiting for a CPU behind other load (CPython's GIL waiters
    // polling beside two CPU hogs made the interpreter's start and end a serial section).
    if let Some(tt) = turns_rule.filter(|_| !turn_takers.is_empty()) {
        let works = |t: &ThreadStates| {
            t.kernel.map_or(0, |k| k.exec_ns) as f64
                >= tt.param("min_member_cpu_share") * r.wall_ns as f64
        };
        let others_work = r
            .threads
            .iter()
            .enumerate()
            .any(|(i, t)| !turn_takers.contains(&i) && works(t));
        if !others_work {
            return vec![];
        }
    }
    let sections: Vec<&SerialSection> = c
        .serial
        .iter()
        .filter(|s| s.thread.is_none_or(|i| !turn_takers.contains(&i)))
        .collect();
    let serial: u64 = sections.iter().map(|s| s.end_ns - s.begin_ns).sum();
    // What running the sections on P CPUs would save is their time on a CPU: behind other load
    // the lone thread also waited for a CPU in them, which it would wait for all the same
    // (python's start, 140 ms of the wall time behind two CPU hogs, read as a medium serial
    // section beside the 50 ms it takes alone).
    // By the kernel's figures, as placed before averaging (which takes in the parallel part's
    // edges); not by CPU samples, which threads that block signals (xz's workers) have none of.
    let ran: u64 = sections
        .iter()
        .map(|s| c.running_ns(s.begin_ns, s.end_ns))
        .sum();
    let p = c.cpus.max(1) as f64;
    if c.cpus < 2 || ran < rule.param("min_serial_ns") as u64 {
        return vec![];
    }
    let stake = (ran as f64 * (1.0 - 1.0 / p)) as u64;
    let Some(severity) = rule.severity_of(ratio(stake, r.wall_ns)) else {
        return vec![];
    };
    // Inside OpenMP regions whose teams wait at the closing barrier, one thread running alone is
    // the region's load imbalance (omp-load-imbalance says so), not a serial part of the program.
    let omp_barrier: u64 = a.summary.omp_regions.iter().map(|x| x.barrier_ns).sum();
    if omp_barrier as f64 >= 0.5 * serial as f64 * (p - 1.0) {
        return vec![];
    }
    let longest = sections
        .iter()
        .max_by_key(|s| s.end_ns - s.begin_ns)
        .expect("serial > 0");
    let thread = longest
        .thread
        .and_then(|i| r.threads.get(i))
        .map_or_else(|| "one thread".to_string(), thread_words);
    let frame = frame_words(longest.user_frame.as_ref());
    let mut evidence = vec![format!(
        "{} serial section(s), {} in all ({} of the wall time); the longest: {} to {}, {} running {}",
        sections.len(),
        fmt_ns(serial as f64),
        fmt_pct(ratio(serial, r.wall_ns)),
        fmt_ns(longest.begin_ns as f64),
        fmt_ns(longest.end_ns as f64),
        thread,
        frame
    )];
    evidence.push(format!(
        "elsewhere at least 2 threads wanted a CPU for {} ({} CPUs)",
        fmt_ns(c.parallel_ns as f64),
        c.cpus
    ));
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(ratio(serial, r.wall_ns))),
            ("thread", thread),
            ("user_frame", frame),
            ("speedup", speedup_words(r.wall_ns, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

fn thread_words(t: &ThreadStates) -> String {
    format!("thread {}", ThreadId::of_states(t).label())
}

pub fn load_imbalance(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((r, c)) = parts(a) else {
        return vec![];
    };
    let Some(im) = &c.imbalance else {
        return vec![];
    };
    // The even split's saving, at most the CPUs the program left free while the early siblings
    // idled: where its other threads kept the CPUs busy meanwhile, spreading the last one's work
    // would have saved nothing (two GIL-bound Python threads beside two hashlib threads had read
    // MEDIUM load-imbalance).
    // A last thread that spent at least its lag waiting for, spinning on or handing over shared
    // state (lock, atomic, spinning) lagged because of that contention, not because it had
    // more work: the contention's own finding names it. A lock that favours one thread lets the
    // other finish late while its extra time goes to the lock's wake-ups and waits (SQLite's
    // memory mutex: the last thread on a CPU 1.6 s against 0.4 s for the same share of
    // queries).
    if let Some(t) = r.threads.get(im.lagging) {
        let contention: u64 = [Category::Lock, Category::Atomic, Category::Spinning]
            .iter()
            .map(|c| t.ns[c.index()])
            .sum();
        if contention >= im.excess_ns() {
            return vec![];
        }
    }
    let first_end = im.finish_ns.iter().copied().min().unwrap_or(im.last_end_ns);
    let free = c.free_ns(first_end, im.last_end_ns);
    let stake = im.excess_ns().min(free);
    let Some(severity) = rule.severity_of(ratio(stake, r.wall_ns)) else {
        return vec![];
    };
    let lag = r
        .threads
        .get(im.lagging)
        .map_or_else(|| "one thread".to_string(), thread_words);
    let frame = frame_words(im.user_frame.as_ref());
    let early = im.finish_ns.iter().filter(|&&f| f < im.last_end_ns).count();
    let evidence = vec![
        format!(
            "{} sibling threads started at {}; {} of them finished (or stopped running) early and idled {} of thread time in all while {} still ran until {}",
            im.members.len(),
            fmt_ns(im.start_ns as f64),
            early,
            fmt_ns(im.idle_ns as f64),
            lag,
            fmt_ns(im.last_end_ns as f64)
        ),
        format!(
            "{} was on a CPU for {}, the other siblings {} on average",
            lag,
            fmt_ns(im.lagging_exec_ns as f64),
            fmt_ns(im.others_exec_ns as f64)
        ),
        format!(
            "with the work spread evenly the group would have ended at {}, {} earlier; the program left {} of CPU time free from the first finish to the last",
            fmt_ns(im.ideal_end_ns as f64),
            fmt_ns(im.excess_ns() as f64),
            fmt_ns(free as f64 * c.cpus.max(1) as f64)
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("thread", lag),
            ("user_frame", frame),
            // Wall time (the longest idle), never above the run: the summed idle is thread
            // time ("idled 3.083 s" of a 2.514 s run read as a stake above the wall time).
            (
                "idle",
                fmt_ns(im.last_end_ns.saturating_sub(first_end) as f64),
            ),
            ("speedup", speedup_words(r.wall_ns, stake)),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

pub fn spinning(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let threads = working(r, rule.param("min_thread_share"));
    let spin: u64 = threads
        .iter()
        .map(|t| t.ns[Category::Spinning.index()])
        .sum();
    let cpu: u64 = threads.iter().map(|t| on_cpu(t)).sum();
    // The spinning share of the time the threads wanted a CPU for: on a loaded machine a
    // sched_yield loop is mostly runnable.
    let wanted: u64 = cpu
        + threads
            .iter()
            .map(|t| t.ns[Category::Spinning.index()].saturating_sub(on_cpu_spin(t)))
            .sum::<u64>();
    let share = ratio(spin, wanted);
    if spin < rule.param("min_spin_ns") as u64 {
        return vec![];
    }
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let site = threads
        .iter()
        .flat_map(|t| t.sites.iter().filter(|s| s.category == Category::Spinning))
        .max_by_key(|s| s.ns);
    let function = site.map_or_else(|| "?".to_string(), |s| s.function());
    let frame = frame_words(site.and_then(|s| s.user_frame()));
    let width = threads.len().min(r.cpus.max(1) as usize).max(1) as u64;
    let stake = spin / width;
    let evidence = vec![format!(
        "{} threads spun {} ({} of the time they ran or waited to run), mostly in {} from {}",
        threads.len(),
        fmt_ns(spin as f64),
        fmt_pct(share),
        function,
        frame
    )];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("function", function),
            ("user_frame", frame),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

/// The part of a thread's spinning that was on a CPU (the rest is a yielding thread's run-queue
/// delay).
fn on_cpu_spin(t: &ThreadStates) -> u64 {
    let Some(k) = t.kernel else {
        return t.ns[Category::Spinning.index()];
    };
    let others: u64 = [
        Category::Compute,
        Category::Allocator,
        Category::Lock,
        Category::Atomic,
        Category::Io,
        Category::KernelMemory,
    ]
    .iter()
    .map(|c| t.ns[c.index()])
    .sum();
    k.exec_ns.saturating_sub(others)
}

pub fn oversubscription(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((r, c)) = parts(a) else {
        return vec![];
    };
    let life: u64 = r.threads.iter().map(|t| t.life_ns).sum();
    let over_share = ratio(c.over_ns, r.wall_ns);
    if over_share < rule.param("min_over_share") || r.peak_threads <= c.cpus as usize {
        return vec![];
    }
    let own_share = ratio(c.own_runnable_ns, life);
    let Some(severity) = rule.severity_of(own_share) else {
        return vec![];
    };
    let evidence = vec![
        format!(
            "up to {:.0} threads wanted a CPU at once on {} CPUs; more than the CPUs for {} ({} of the wall time)",
            c.peak_wanting,
            c.cpus,
            fmt_ns(c.over_ns as f64),
            fmt_pct(over_share)
        ),
        format!(
            "the threads waited {} for a CPU because of each other ({} of their summed life)",
            fmt_ns(c.own_runnable_ns as f64),
            fmt_pct(own_share)
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[
            ("peak", format!("{:.0}", c.peak_wanting)),
            ("cpus", c.cpus.to_string()),
            ("share", fmt_pct(own_share)),
        ],
        evidence,
    );
    // More threads than CPUs costs switches and caches, not the CPUs' time: no wall time to win
    // is claimed.
    vec![with_stake(f, a, 0)]
}

pub fn waiting_for_cpu(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((r, c)) = parts(a) else {
        return vec![];
    };
    let life: u64 = r.threads.iter().map(|t| t.life_ns).sum();
    let share = ratio(c.other_runnable_ns, life);
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let evidence = vec![format!(
        "runnable, waiting for a CPU taken by other processes: {} ({} of the threads' life); the run's wall time is stretched accordingly",
        fmt_ns(c.other_runnable_ns as f64),
        fmt_pct(share)
    )];
    let f = build(rule, a, severity, &[("share", fmt_pct(share))], evidence);
    vec![with_stake(f, a, 0)]
}

pub fn page_faults(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let threads = working(r, rule.param("min_thread_share"));
    let km: u64 = threads
        .iter()
        .map(|t| t.ns[Category::KernelMemory.index()])
        .sum();
    let cpu: u64 = threads.iter().map(|t| on_cpu(t)).sum();
    if km < rule.param("min_kernel_ns") as u64 {
        return vec![];
    }
    // Of the time awake (on a CPU or in a system call): kernel memory work includes waits inside
    // mmap/munmap for the process's memory map, off a CPU, so CPU time alone can be less than it.
    let awake: u64 = threads.iter().map(|t| t.awake_ns().max(on_cpu(t))).sum();
    let share = ratio(km, awake);
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let minflt: u64 = threads
        .iter()
        .filter_map(|t| t.kernel)
        .map(|k| k.minflt)
        .sum();
    let majflt: u64 = threads
        .iter()
        .filter_map(|t| t.kernel)
        .map(|k| k.majflt)
        .sum();
    let site = threads
        .iter()
        .flat_map(|t| {
            t.sites
                .iter()
                .filter(|s| matches!(s.category, Category::KernelMemory | Category::Compute))
        })
        .max_by_key(|s| s.ns);
    let frame = frame_words(site.and_then(|s| s.user_frame()));
    let width = threads.len().min(r.cpus.max(1) as usize).max(1) as u64;
    let stake = km / width;
    let evidence = vec![
        format!(
            "kernel memory work (page faults, mmap/munmap): {} of {} awake ({}); {} on a CPU",
            fmt_ns(km as f64),
            fmt_ns(awake as f64),
            fmt_pct(share),
            fmt_ns(cpu as f64)
        ),
        format!(
            "{} minor and {} major page faults ({} per second of CPU time), mostly under {}",
            fmt_count(minflt),
            fmt_count(majflt),
            fmt_count((minflt as f64 / (cpu as f64 / 1e9).max(1e-9)) as u64),
            frame
        ),
    ];
    let f = build(
        rule,
        a,
        severity,
        &[("share", fmt_pct(share)), ("user_frame", frame)],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}

pub fn arena_lock(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(r) = a.states.as_ref() else {
        return vec![];
    };
    let mut lock = 0u64;
    let mut best: Option<(&crate::analysis::states::StateSite, u64)> = None;
    let mut samples = 0u64;
    let mut names: Vec<(&str, u64)> = Vec::new();
    for t in &r.threads {
        for s in t.sites.iter().filter(|s| s.category == Category::Lock) {
            if is_arena_wait(s) {
                lock += s.ns;
                samples += s.samples;
                for l in s.locks.iter().filter(|l| is_arena_lock(l.how)) {
                    match names.iter_mut().find(|n| n.0 == l.name) {
                        Some(n) => n.1 += l.samples,
                        None => names.push((&l.name, l.samples)),
                    }
                }
                if best.is_none_or(|b| s.ns > b.1) {
                    best = Some((s, s.ns));
                }
            }
        }
    }
    // Of the time the threads were awake (not runnable): a wait that includes queueing for a
    // CPU would count the machine's load.
    let awake: u64 = r
        .threads
        .iter()
        .map(|t| {
            t.life_ns
                .saturating_sub(t.ns[Category::Runnable.index()])
                .saturating_sub(t.ns[Category::Blocked.index()])
                .saturating_sub(t.ns[Category::Idle.index()])
        })
        .sum();
    let share = ratio(lock, awake);
    if lock < rule.param("min_lock_ns") as u64 {
        return vec![];
    }
    let Some(severity) = rule.severity_of(share) else {
        return vec![];
    };
    let frame = frame_words(best.and_then(|b| b.0.user_frame()));
    let function = best.map_or_else(|| "malloc".to_string(), |b| b.0.function());
    let width = r.peak_threads.min(r.cpus.max(1) as usize).max(1) as u64;
    let stake = lock / width;
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let lock_name = names
        .first()
        .map_or_else(|| "malloc's arena lock".to_string(), |n| n.0.to_string());
    let mut evidence = vec![format!(
        "threads waited {} for {lock_name} ({} of their time awake and not blocked), mostly in {} from {}",
        fmt_ns(lock as f64),
        fmt_pct(share),
        function,
        frame
    )];
    evidence.extend(super::view::caught_locks_evidence(
        names.iter().copied(),
        samples,
    ));
    let f = build(
        rule,
        a,
        severity,
        &[
            ("share", fmt_pct(share)),
            ("function", function),
            ("user_frame", frame),
            ("lock", lock_name),
        ],
        evidence,
    );
    vec![with_stake(f, a, stake)]
}
