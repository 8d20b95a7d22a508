//! The sites stage of the analysis: the sampled stacks of a profile, symbolized, with their
//! estimated calls, bytes and time (Horvitz–Thompson estimates: each sample weighs 1/p, see
//! docs/STACKS.md), for allocation sites and the sites of each lock.

use super::summary::{LockSummary, Summary, sum};
use crate::profile::format::{FN_NAMES, LockRole};
use crate::profile::{LockSite, Profile};
use crate::symbols::{Frame, Symbolizer, user_frame};

#[derive(Debug, Clone, Default)]
pub struct SiteSummary {
    /// Innermost first, inlined frames included.
    pub frames: Vec<Frame>,
    /// Index in `frames` of the user's frame (the first outside the allocator and runtimes).
    pub user: usize,
    pub function: &'static str,
    pub samples: u64,
    pub calls: u64,
    pub bytes: u64,
    pub time_ns: u64,
}

impl SiteSummary {
    pub fn user_frame(&self) -> Option<&Frame> {
        self.frames.get(self.user)
    }
}

/// Fills the allocation sites and the lock sites of a summary from its profile.
pub fn fill(profile: &Profile, sym: &mut Symbolizer, s: &mut Summary) {
    s.alloc_sites = alloc_sites(profile, sym);
    s.stack_sampling = profile.stack_sampling;
    lock_sites(profile, sym, &mut s.locks);
}

/// The allocation sites of a profile, by estimated time, most first.
fn alloc_sites(profile: &Profile, sym: &mut Symbolizer) -> Vec<SiteSummary> {
    let total = profile.alloc_sites.len();
    let scale = super::summary::alloc_time_scale_by_function(profile);
    let mut out = Vec::with_capacity(total);
    for (i, site) in profile.alloc_sites.iter().enumerate() {
        sym.progress(i, total);
        if site.samples == 0 {
            continue;
        }
        let frames = sym.stack(&profile.stacks[&site.stack]);
        let user = user_frame(&frames);
        out.push(SiteSummary {
            user,
            frames,
            function: FN_NAMES[site.function],
            samples: site.samples,
            calls: (site.weight_q16 as f64 / 65536.0).round() as u64,
            bytes: site.est_bytes,
            time_ns: (profile.ticks_to_ns(site.est_ticks) as f64
                * scale.get(site.function).copied().unwrap_or(1.0))
            .round() as u64,
        });
    }
    out.sort_by(|a, b| b.time_ns.cmp(&a.time_ns).then(b.calls.cmp(&a.calls)));
    out
}

/// A stack of threads waiting for a lock (or releasing it while others waited), with its share
/// of the lock's exact contended acquisitions and wait time, in proportion to the samples.
#[derive(Debug, Clone, Default)]
pub struct LockSiteSummary {
    pub frames: Vec<Frame>,
    pub user: usize,
    pub samples: u64,
    pub contended: u64,
    pub wait_ns: u64,
}

impl LockSiteSummary {
    pub fn user_frame(&self) -> Option<&Frame> {
        self.frames.get(self.user)
    }
}

fn lock_sites(profile: &Profile, sym: &mut Symbolizer, locks: &mut [LockSummary]) {
    for lock in locks.iter_mut() {
        for role in [LockRole::Waiter, LockRole::Holder] {
            // One entry per stack (the interposer may have given a stack two slots).
            let mut sites: Vec<LockSite> = Vec::new();
            for l in profile.lock_sites.iter().filter(|l| {
                l.address == lock.address && l.kind.name() == lock.kind && l.role == role
            }) {
                match sites.iter_mut().find(|x| x.stack == l.stack) {
                    Some(x) => {
                        x.events = x.events.saturating_add(l.events);
                        x.wait_ticks = x.wait_ticks.saturating_add(l.wait_ticks);
                    }
                    None => sites.push(*l),
                }
            }
            let events = sum(sites.iter().map(|l| l.events));
            let waits = sum(sites.iter().map(|l| l.wait_ticks));
            let mut out: Vec<LockSiteSummary> = sites
                .iter()
                .map(|l| {
                    let frames = sym.stack(&profile.stacks[&l.stack]);
                    let share_events = l.events as f64 / events.max(1) as f64;
                    let share_wait = if waits > 0 {
                        l.wait_ticks as f64 / waits as f64
                    } else {
                        share_events
                    };
                    LockSiteSummary {
                        user: user_frame(&frames),
                        frames,
                        samples: l.events,
                        contended: (lock.contended as f64 * share_events).round() as u64,
                        wait_ns: (lock.wait_ns as f64 * share_wait).round() as u64,
                    }
                })
                .collect();
            out.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(b.samples.cmp(&a.samples)));
            if role == LockRole::Waiter {
                lock.sites = out;
            } else {
                lock.holder_sites = out;
            }
        }
    }
}

/// Sites merged by their user frame (function, file and line), for the terminal report.
#[derive(Debug, Clone)]
pub struct SiteGroup {
    pub label: String,
    pub calls: u64,
    pub bytes: u64,
    pub time_ns: u64,
    pub samples: u64,
    /// Indices of the member sites, heaviest (by time) first.
    pub members: Vec<usize>,
}

pub fn group_by_user_frame(sites: &[SiteSummary]) -> Vec<SiteGroup> {
    let mut groups: Vec<SiteGroup> = Vec::new();
    for (i, s) in sites.iter().enumerate() {
        let mut label = s
            .user_frame()
            .map_or_else(|| "?".to_string(), Frame::display);
        // The caller too: a helper called from two places is two sites.
        if let Some(caller) = s.frames.get(s.user + 1) {
            label = format!("{label} <- {}", caller.display());
        }
        match groups.iter_mut().find(|g| g.label == label) {
            Some(g) => {
                g.calls = g.calls.saturating_add(s.calls);
                g.bytes = g.bytes.saturating_add(s.bytes);
                g.time_ns = g.time_ns.saturating_add(s.time_ns);
                g.samples = g.samples.saturating_add(s.samples);
                g.members.push(i);
            }
            None => groups.push(SiteGroup {
                label,
                calls: s.calls,
                bytes: s.bytes,
                time_ns: s.time_ns,
                samples: s.samples,
                members: vec![i],
            }),
        }
    }
    groups
}
