//! Detectors over the allocator figures: small allocations, allocation inside library calls,
//! allocator time and cross-thread frees.

use super::rules::{Rule, SampledShare};
use super::view::{UNKNOWN_FRAME, short_function, site_user_text};
use super::{Finding, build};
use crate::analysis::Analysis;
use crate::analysis::sites::SiteSummary;
use crate::analysis::threads::ThreadId;
use crate::util::{fmt_count, fmt_ns, fmt_pct, ratio};

/// The allocator's share of the threads' CPU time (of their wall time without CPU figures): what
/// the allocator costs, which the allocator rules' `cost_severity` caps their severity by. Net of
/// waiting for a CPU (`Summary::alloc_share_of_cpu`): timed calls include it, and on a loaded
/// machine they can add up to more than the CPU time.
/// With the CPU samples it comes from, it counts for severity at its lower bound (SampledShare).
fn allocator_cpu_share(a: &Analysis) -> SampledShare {
    let s = &a.summary;
    if s.cpu_ns() > 0 {
        SampledShare::new(s.alloc_share_of_cpu(), s.alloc_cpu_samples())
    } else {
        SampledShare::new(s.alloc_share_of_life().min(1.0), 0)
    }
}

/// "N% of the threads' CPU time", with how low a share from few CPU samples may be, and (for the
/// findings whose severity it caps) that the severity follows it.
fn cpu_share_words(share: SampledShare, caps_severity: bool) -> String {
    let uncertain = share.estimate - share.low >= 0.005;
    let mut notes = Vec::new();
    if uncertain {
        notes.push(format!(
            "from {} CPU samples, so possibly as little as {}",
            fmt_count(share.samples),
            fmt_pct(share.low)
        ));
    }
    if caps_severity {
        let what = if uncertain { "that" } else { "it" };
        notes.push(format!("the severity follows {what}"));
    }
    let words = format!("{} of the threads' CPU time", fmt_pct(share.estimate));
    if notes.is_empty() {
        words
    } else {
        format!("{words} ({})", notes.join(": "))
    }
}

/// The share of the run's CPUs the process used: its threads' CPU time over its wall time x the
/// CPUs its threads could use at once (None without a wall time or CPU figures).
fn cpu_share_of_run(a: &Analysis) -> Option<f64> {
    let s = &a.summary;
    let width = (s.ncpus.max(1) as usize).min(s.threads.len().max(1));
    (s.wall_ns > 0 && s.cpu_ns() > 0).then(|| ratio(s.cpu_ns(), s.wall_ns as f64 * width as f64))
}

/// Whether a finding whose level only its estimate from few CPU samples reaches (`at_bound`
/// false) rests on too little: the process used less than `min_uncertain_cpu_of_run` of the run's
/// CPUs, so its few samples are all there is and what they measure could not change the run's
/// time (a cargo build's cargo process: 5 CPU samples of 54 ms of CPU in a 10.7 s build read as
/// LOW allocator-time and small-allocations, "possibly as little as 0.0%").
/// A share whose lower bound is nothing counts as reaching no level either (cross-thread-frees'
/// info level starts at 0%: 4.5% "from 27 CPU samples, so possibly as little as 0.0%" of a cargo
/// process that used 0.5% of the run's CPUs).
fn too_little_evidence(rule: &Rule, a: &Analysis, at_bound: bool, share: SampledShare) -> bool {
    let sure = at_bound && (share.samples == 0 || share.low > 0.0);
    !sure && cpu_share_of_run(a).is_some_and(|x| x < rule.param("min_uncertain_cpu_of_run"))
}

/// Allocator calls and their share of CPU time, if both gates are passed.
fn busy_allocator(rule: &Rule, a: &Analysis) -> Option<(f64, SampledShare)> {
    let calls = a.summary.alloc_calls() as f64;
    let share = allocator_cpu_share(a);
    (calls >= rule.param("min_calls") && share.estimate >= rule.param("min_alloc_cpu_share"))
        .then_some((calls, share))
}

/// Allocation requests (the size histogram's total), or all allocator calls without a histogram.
fn allocation_requests(a: &Analysis, calls: f64) -> f64 {
    let requests = a.summary.requests() as f64;
    if requests > 0.0 { requests } else { calls }
}

/// Allocation sites grouped by user frame (one frame can reach the allocator by several stacks),
/// keeping sites whose mean request size passes `keep`: (user frame, calls, bytes), most calls first.
fn requests_by_user_frame(a: &Analysis, keep: impl Fn(f64) -> bool) -> Vec<(String, f64, f64)> {
    let mut by_user: Vec<(String, f64, f64)> = Vec::new();
    for site in &a.summary.alloc_sites {
        let (calls, bytes) = (site.calls as f64, site.bytes as f64);
        if calls <= 0.0 || !keep(bytes / calls) {
            continue;
        }
        let user = site_user_text(site).unwrap_or_else(|| UNKNOWN_FRAME.into());
        match by_user.iter_mut().find(|u| u.0 == user) {
            Some(u) => {
                u.1 += calls;
                u.2 += bytes;
            }
            None => by_user.push((user, calls, bytes)),
        }
    }
    by_user.sort_by(|a, b| b.1.total_cmp(&a.1));
    by_user
}

pub fn small_allocations(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((calls, alloc_share)) = busy_allocator(rule, a) else {
        return vec![];
    };
    let max_bytes = rule.param("max_bytes");
    let also_bytes = rule.param("also_bytes");
    let share = a.summary.size_share_at_most(max_bytes as u64);
    let Some(severity) = rule.severity_with_cost(share, alloc_share) else {
        return vec![];
    };
    if too_little_evidence(rule, a, rule.cost_at_bound(alloc_share), alloc_share) {
        return vec![];
    }
    let mut evidence = vec![
        format!(
            "{} of allocation requests are {also_bytes} bytes or less, {} are {max_bytes} bytes or less",
            fmt_pct(a.summary.size_share_at_most(also_bytes as u64)),
            fmt_pct(share)
        ),
        format!(
            "{} allocator calls took {}",
            fmt_count(calls as u64),
            cpu_share_words(alloc_share, true)
        ),
    ];
    let by_user = requests_by_user_frame(a, |mean| mean <= max_bytes);
    let requests = allocation_requests(a, calls);
    for (user, site_calls, bytes) in by_user.iter().take(rule.param("top_sites") as usize) {
        evidence.push(format!(
            "{} of allocation requests ({:.0} bytes on average) come from {user}",
            fmt_pct(ratio(*site_calls, requests).min(1.0)),
            ratio(*bytes, *site_calls)
        ));
    }
    vec![
        build(
            rule,
            a,
            severity,
            &[
                ("share", fmt_pct(share)),
                ("max_bytes", max_bytes.to_string()),
                ("alloc_cpu_share", fmt_pct(alloc_share.estimate)),
            ],
            evidence,
        )
        .uncertain_unless(rule.cost_at_bound(alloc_share)),
    ]
}

/// The library call a site's stack passes through: the outermost frame between the allocator and
/// the user frame that matches a family (the call the user's code made), with the family's name.
fn library_call<'a>(rule: &'a Rule, site: &SiteSummary) -> Option<(&'a str, String)> {
    let frames = &site.frames;
    frames[..site.user.min(frames.len())]
        .iter()
        .rev()
        .find_map(|f| {
            let function = f.function.as_deref()?;
            let family = rule
                .families
                .iter()
                .find(|fam| fam.patterns.iter().any(|p| function.contains(p.as_str())))?;
            Some((family.name.as_str(), short_function(function)))
        })
}

pub fn library_hotspots(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some((calls, alloc_share)) = busy_allocator(rule, a) else {
        return vec![];
    };
    if too_little_evidence(rule, a, rule.cost_at_bound(alloc_share), alloc_share) {
        return vec![];
    }
    // (family, function, user frame) -> estimated calls and sampled stacks
    let mut groups: Vec<(&str, String, String, f64, f64)> = Vec::new();
    for site in &a.summary.alloc_sites {
        let Some((family, function)) = library_call(rule, site) else {
            continue;
        };
        let user = site_user_text(site).unwrap_or_else(|| UNKNOWN_FRAME.into());
        let (site_calls, samples) = (site.calls as f64, site.samples as f64);
        match groups
            .iter_mut()
            .find(|g| g.0 == family && g.1 == function && g.2 == user)
        {
            Some(g) => {
                g.3 += site_calls;
                g.4 += samples;
            }
            None => groups.push((family, function, user, site_calls, samples)),
        }
    }
    groups.sort_by(|a, b| b.3.total_cmp(&a.3));
    let requests = allocation_requests(a, calls);
    groups
        .into_iter()
        .take(3)
        .filter_map(|(family, function, user, group_calls, samples)| {
            let share = ratio(group_calls, requests).min(1.0);
            let severity = rule.severity_with_cost(share, alloc_share)?;
            let evidence = vec![
                format!(
                    "about {} of {} allocation requests ({}) pass through {function} ({family}), estimated from {} sampled stacks",
                    fmt_count(group_calls as u64),
                    fmt_count(requests as u64),
                    fmt_pct(share),
                    fmt_count(samples as u64)
                ),
                format!("the call is made from {user}"),
                format!("the allocator took {}", cpu_share_words(alloc_share, true)),
                "allocations per call of the library function are not known: the profile counts allocator calls, not library calls".to_string(),
            ];
            let f = build(
                rule,
                a,
                severity,
                &[
                    ("family", family.to_string()),
                    ("function", function),
                    ("user_frame", user),
                    ("share", fmt_pct(share)),
                ],
                evidence,
            );
            Some(f.uncertain_unless(rule.cost_at_bound(alloc_share)))
        })
        .collect()
}

pub fn allocator_time(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let (min_calls, min_time) = (rule.param("min_calls"), rule.param("min_time_ns"));
    let s = &a.summary;
    let calls = s.alloc_calls() as f64;
    let timed = s.alloc_ns() as f64;
    // Without CPU figures (an old or cut profile), the calls' time is all there is.
    let on_cpu = if s.cpu_ns() > 0 {
        s.alloc_cpu_ns()
    } else {
        s.alloc_ns()
    } as f64;
    let cpu_share = allocator_cpu_share(a);
    let global = if calls >= min_calls && on_cpu >= min_time {
        cpu_share
    } else {
        SampledShare::new(0.0, 0)
    };
    // The thread that spends the largest share of its CPU time in the allocator, among busy
    // ones: a thread that ran little (a main thread waiting for its workers) is not where the
    // program's time goes, whatever its share.
    // A share from a thread's CPU samples counts at its lower confidence bound: the largest of
    // many threads' sampled shares is otherwise their noise (16 like threads of about 30 samples
    // each, 10% in the allocator: one showed 28.5%).
    let busiest = s.threads.iter().map(|t| t.cpu_ns).max().unwrap_or(0) as f64;
    let worst = s
        .threads
        .iter()
        .filter_map(|t| {
            let (ns, n) = (t.alloc_cpu_ns as f64, t.alloc_calls as f64);
            let share = ratio(ns, t.cpu_ns);
            let samples = a.states_of(t.serial).map_or(0, |st| st.cpu_marks.len()) as f64;
            // In a sampled profile a thread without CPU samples has only a rough estimate: it
            // can add to the program's share but not be the worst thread on its own.
            if a.sampling().is_some_and(|s| s.cpu_hz > 0) && samples == 0.0 {
                return None;
            }
            let bound = crate::util::share_lower_bound(share, samples);
            let busy = t.cpu_ns as f64 >= rule.param("min_thread_cpu_of_busiest") * busiest;
            (n >= min_calls && ns >= min_time && busy).then_some((t, bound, ns, n, share))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let global_severity = rule.severity_of_sampled(global);
    let thread_severity = worst.and_then(|w| rule.severity_of(w.1));
    let Some(severity) = global_severity.into_iter().chain(thread_severity).min() else {
        return vec![];
    };
    let mut evidence = vec![format!(
        "{} allocator calls: {} on a CPU, {}",
        fmt_count(calls as u64),
        fmt_ns(on_cpu),
        cpu_share_words(cpu_share, false),
    )];
    if timed > on_cpu * 1.1 {
        // A call of a few nanoseconds is timed by two clock reads that cost as much as it does
        // (an rdtsc pair around an empty call measures 9.5 ns on the 2-CPU machine, a thread-cache
        // malloc 9.7): its timed length is mostly the clock, not time spent waiting inside.
        let mean = timed / calls.max(1.0);
        evidence.push(if mean < rule.param("clock_bound_call_ns") {
            format!(
                "the calls lasted {} from start to end as timed ({} of the threads' life), {} a call: a call this short is timed by two clock reads that cost about as much as it does, so that length is mostly the clock's; their time on a CPU is the allocator's",
                fmt_ns(timed),
                fmt_pct(s.alloc_share_of_life()),
                fmt_ns(mean)
            )
        } else {
            format!(
                "the calls lasted {} from start to end ({} of the threads' life): the rest of it the threads waited for a CPU or a lock inside them",
                fmt_ns(timed),
                fmt_pct(s.alloc_share_of_life())
            )
        });
    }
    let (share, scope) = match worst {
        Some((t, _, ns, n, share)) => {
            evidence.push(format!(
                "thread {} spent {} of its CPU time in the allocator ({} over {} calls)",
                ThreadId::of_summary(t).label(),
                fmt_pct(share),
                fmt_ns(ns),
                fmt_count(n as u64)
            ));
            let thread_worse = match (thread_severity, global_severity) {
                (Some(t), Some(g)) => t < g,
                (t, g) => t.is_some() && g.is_none(),
            };
            if thread_worse {
                (
                    share,
                    format!("thread {}'s CPU time", ThreadId::of_summary(t).label()),
                )
            } else {
                (global.estimate, "the threads' CPU time".to_string())
            }
        }
        None => (global.estimate, "the threads' CPU time".to_string()),
    };
    let requests = allocation_requests(a, calls);
    if let Some((user, site_calls, _)) = requests_by_user_frame(a, |_| true).first() {
        evidence.push(format!(
            "the most frequent caller is {user} with {} of allocation requests",
            fmt_pct(ratio(*site_calls, requests).min(1.0))
        ));
    }
    let mut functions: Vec<(&str, f64, f64)> = s
        .groups
        .iter()
        .map(|g| (g.name, g.time_ns as f64, g.calls as f64))
        .filter(|f| f.1 > 0.0)
        .collect();
    functions.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (name, ns, n) in functions.iter().take(2) {
        evidence.push(format!(
            "{name}: {} calls, {} in total, {} per call",
            fmt_count(*n as u64),
            fmt_ns(*ns),
            fmt_ns(ratio(*ns, *n))
        ));
    }
    // From the thread's bound, or the program's; else only by an estimate.
    let at_bound = thread_severity.is_some() || rule.sampled_at_bound(global);
    // (A thread's share at its bound is sure whatever the program's share.)
    let bound_share = match thread_severity {
        Some(_) => SampledShare::new(cpu_share.estimate, 0),
        None => cpu_share,
    };
    if too_little_evidence(rule, a, at_bound, bound_share) {
        return vec![];
    }
    vec![
        build(
            rule,
            a,
            severity,
            &[
                ("share", fmt_pct(share)),
                ("scope", scope),
                ("calls", fmt_count(calls as u64)),
                ("time", fmt_ns(on_cpu)),
            ],
            evidence,
        )
        .uncertain_unless(at_bound),
    ]
}

pub fn cross_thread_frees(rule: &Rule, a: &Analysis) -> Vec<Finding> {
    let Some(c) = a.summary.cross_frees else {
        return vec![];
    };
    if (c.calls as f64) < rule.param("min_calls") {
        return vec![];
    }
    let alloc_share = allocator_cpu_share(a);
    let Some(severity) = rule.severity_with_cost(c.share, alloc_share) else {
        return vec![];
    };
    if too_little_evidence(rule, a, rule.cost_at_bound(alloc_share), alloc_share) {
        return vec![];
    }
    let evidence = vec![
        format!(
            "{} frees ({} of all frees) released memory allocated by another thread",
            fmt_count(c.calls),
            fmt_pct(c.share)
        ),
        format!("the allocator took {}", cpu_share_words(alloc_share, true)),
    ];
    vec![
        build(rule, a, severity, &[("share", fmt_pct(c.share))], evidence)
            .uncertain_unless(rule.cost_at_bound(alloc_share)),
    ]
}

#[cfg(test)]
#[path = "alloc_tests.rs"]
mod tests;
