//! The lock waits no hook timed, from the thread states' samples: the locks the C library and
//! other runtimes take inside (malloc's arenas, the timezone lock, random()'s, a mutex re-taken
//! inside a condition wait), and waits begun before an attach loaded the hooks. They complete each
//! thread's lock wait and get rows of their own beside the timed locks, so that every lock wait
//! the run's figures count has a row that names it.

use super::states::{Category, StateReport};
use super::summary::Summary;
use super::syscalls::public_libc_name;
use crate::symbols::{Frame, qualified_name, user_frame};
use std::collections::HashMap;

/// One lock no hook timed, as the samples of the threads that waited for it name it.
#[derive(Debug, Clone, Default)]
pub struct UnhookedLock {
    /// `malloc's arena lock (main_arena)`, `the lock of stdout`, or the C library function the
    /// samples waited in where no word was named (`a lock in pthread_cond_wait`).
    pub name: String,
    /// The lock word's address, where the samples caught one (0: none).
    pub address: u64,
    /// Estimated: the samples' time, scaled to what the threads' lock wait counts of it.
    pub wait_ns: u64,
    pub samples: u64,
    pub threads: usize,
    /// The heaviest waiting stack and its user frame.
    pub frames: Vec<Frame>,
    pub user: usize,
}

impl UnhookedLock {
    pub fn user_frame(&self) -> Option<&Frame> {
        self.frames.get(self.user)
    }
}

/// One number for a thread's time waiting for locks, read by every view: the waits the hooks
/// timed (pthread locks, runtimes' futex locks, OpenMP critical sections) miss the locks the C
/// library and other runtimes take inside (malloc's arenas, the timezone lock, random()'s), which
/// only the thread states see. A thread's lock wait is the waits the hooks recorded, exact, plus
/// the states' `lock` time outside them (samples that meet no recorded wait: locks no hook saw),
/// and at least the hooks' total. Not the larger of the hooks' total and the states' `lock` time:
/// the max of an exact figure and a noisy estimate of the same time reads high (a thread
/// alternating a lock wait and a disk flush, 6-37% above its timed waits). Without states, the
/// timed waits alone. What this adds to a thread's hooked total is shared among its lock sites
/// by their sampled time, and summed per lock over the threads into `summary.unhooked_locks`.
pub fn sampled_lock_waits(summary: &mut Summary, states: Option<&StateReport>) {
    let Some(r) = states else { return };
    let lock = Category::Lock.index();
    let states_of = super::threads::by_serial(&r.threads, |t| t.serial);
    let mut rows: HashMap<String, (UnhookedLock, u64, Vec<u32>)> = HashMap::new();
    for t in summary.threads.iter_mut() {
        let Some(st) = states_of.get(&t.serial) else {
            continue;
        };
        let unseen = st.ns[lock].saturating_sub(st.lock_in_recorded_ns);
        let hooked = t.lock_wait_ns;
        t.lock_wait_ns = lock_wait_ns(hooked, st.lock_recorded_ns, unseen).min(t.wall_ns);
        let added = t.lock_wait_ns.saturating_sub(hooked);
        let sites: Vec<_> = st
            .sites
            .iter()
            .filter(|s| s.category == Category::Lock && s.ns > 0)
            .collect();
        let sampled: u64 = sites.iter().map(|s| s.ns).sum();
        if added == 0 || sampled == 0 {
            continue;
        }
        let scale = added as f64 / sampled as f64;
        for site in sites {
            let site_ns = site.ns as f64 * scale;
            // A site's time goes to the words its samples caught, by their samples; the rest (or
            // all, where none was caught) to the function the samples waited in.
            let caught: u64 = site.locks.iter().map(|l| l.samples).sum();
            let rest = site.samples.saturating_sub(caught);
            let whole = (caught + rest).max(1) as f64;
            let mut parts: Vec<(String, u64, f64, u64)> = site
                .locks
                .iter()
                .map(|l| {
                    (
                        l.name.clone(),
                        l.object,
                        site_ns * l.samples as f64 / whole,
                        l.samples,
                    )
                })
                .collect();
            if rest > 0 || parts.is_empty() {
                let words = site
                    .decided_by
                    .and_then(|i| site.frames.get(i))
                    .and_then(|f| f.function.as_deref())
                    .map_or_else(
                        || "a lock no hook saw".to_string(),
                        |f| format!("a lock in {}", public_libc_name(qualified_name(f))),
                    );
                let ns = if parts.is_empty() {
                    site_ns
                } else {
                    site_ns * rest as f64 / whole
                };
                parts.push((words, 0, ns, rest.max(1)));
            }
            for (name, address, ns, samples) in parts {
                let row = rows.entry(name.clone()).or_insert_with(|| {
                    (
                        UnhookedLock {
                            name,
                            address,
                            frames: site.frames.clone(),
                            user: user_frame(&site.frames),
                            ..UnhookedLock::default()
                        },
                        0,
                        Vec::new(),
                    )
                });
                row.0.wait_ns += ns.round() as u64;
                row.0.samples += samples;
                if site.ns > row.1 {
                    row.1 = site.ns;
                    row.0.frames = site.frames.clone();
                    row.0.user = user_frame(&site.frames);
                }
                if !row.2.contains(&t.serial) {
                    row.2.push(t.serial);
                }
            }
        }
    }
    let mut list: Vec<UnhookedLock> = rows
        .into_values()
        .map(|(mut l, _, threads)| {
            l.threads = threads.len();
            l
        })
        .filter(|l| l.wait_ns > 0)
        .collect();
    list.sort_by(|a, b| b.wait_ns.cmp(&a.wait_ns).then(a.name.cmp(&b.name)));
    summary.unhooked_locks = list;
}

/// A thread's lock wait from the hooks' total, the part of it recorded wait by wait, and the
/// sampled lock time that met no recorded wait.
fn lock_wait_ns(hooked: u64, recorded: u64, unseen: u64) -> u64 {
    hooked.max(recorded.saturating_add(unseen))
}

#[cfg(test)]
mod tests {
    use super::lock_wait_ns;

    #[test]
    fn a_threads_lock_wait_is_its_recorded_waits_plus_the_locks_no_hook_saw() {
        // All of it hooked and recorded: the exact figure, whatever the samples read inside it.
        assert_eq!(lock_wait_ns(500, 500, 0), 500);
        // The C library's own locks beside: added.
        assert_eq!(lock_wait_ns(500, 500, 120), 620);
        // None hooked: the samples alone.
        assert_eq!(lock_wait_ns(0, 0, 300), 300);
        // Waits lost to a full ring: their samples stand for them, the hooks' total is the floor.
        assert_eq!(lock_wait_ns(500, 300, 150), 500);
        assert_eq!(lock_wait_ns(500, 300, 260), 560);
    }
}
