//! The critical path's stretches asleep: the walk on the recorded waits counts a stretch without
//! one as the thread's own time, but a thread asleep in a call the interposer does not record
//! (poll, epoll_wait, a read of a socket, a futex of a library) did no work there. Its sampled
//! states say so: such a stretch is on the path as waiting with no known waker, as an unknown
//! wait's is, so that no thread is said to hold the run up by work it did not do.

use super::categories::Category;
use super::states::StateReport;
use super::waitfor::{CriticalPath, PathSegment};
use crate::profile::Profile;
use std::collections::BTreeMap;

/// Per thread of the profile (by index into `Profile::threads`), the stretches its sampled states
/// put it asleep (blocked, or a runtime's idle worker), in monotonic ns, sorted and merged.
pub fn stretches(profile: &Profile, states: Option<&StateReport>) -> Vec<Vec<(u64, u64)>> {
    let start = profile.process.start_mono_ns;
    profile
        .threads
        .iter()
        .map(|t| {
            let Some(s) = states.and_then(|r| r.threads.iter().find(|s| s.serial == t.serial))
            else {
                return Vec::new();
            };
            let mut v: Vec<(u64, u64)> = s
                .runs
                .iter()
                .filter(|r| matches!(r.2, Category::Blocked | Category::Idle) && r.0 < r.1)
                .map(|r| (start + r.0, start + r.1))
                .collect();
            v.sort_unstable();
            let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
            for (b, e) in v {
                match merged.last_mut() {
                    Some(last) if b <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((b, e)),
                }
            }
            merged
        })
        .collect()
}

/// Splits the path's own stretches where their thread slept (`asleep`, from [`stretches`]):
/// those parts are marked `asleep` and count as waiting in `by_thread`.
pub fn mark(path: &mut CriticalPath, asleep: &[Vec<(u64, u64)>]) {
    let mut out: Vec<PathSegment> = Vec::with_capacity(path.segments.len());
    for s in path.segments.drain(..) {
        let list = asleep.get(s.thread).map_or(&[][..], |v| v.as_slice());
        if s.waiting.is_some() || s.asleep || list.is_empty() {
            out.push(s);
            continue;
        }
        let piece = |start_ns, end_ns, asleep| PathSegment {
            start_ns,
            end_ns,
            asleep,
            ..s
        };
        let mut at = s.start_ns;
        let first = list.partition_point(|&(_, e)| e <= s.start_ns);
        for &(b, e) in list[first..].iter().take_while(|&&(b, _)| b < s.end_ns) {
            let (b, e) = (b.max(at), e.min(s.end_ns));
            if b > at {
                out.push(piece(at, b, false));
            }
            if e > b {
                out.push(piece(b, e, true));
                at = e;
            }
        }
        if at < s.end_ns {
            out.push(piece(at, s.end_ns, false));
        }
    }
    path.segments = out;
    path.by_thread = by_thread(&path.segments);
}

/// Each thread's time on the path, (thread index, own ns, waiting ns), most first: a segment's
/// time is waiting when it waits (a recorded wait with no known waker) or sleeps.
pub fn by_thread(segments: &[PathSegment]) -> Vec<(usize, u64, u64)> {
    let mut sums: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
    for s in segments {
        let e = sums.entry(s.thread).or_default();
        let len = s.end_ns - s.start_ns;
        if s.waiting.is_some() || s.asleep {
            e.1 += len;
        } else {
            e.0 += len;
        }
    }
    let mut by_thread: Vec<(usize, u64, u64)> =
        sums.into_iter().map(|(i, (a, b))| (i, a, b)).collect();
    by_thread.sort_by(|a, b| (b.1 + b.2).cmp(&(a.1 + a.2)).then(a.0.cmp(&b.0)));
    by_thread
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(thread: usize, start_ns: u64, end_ns: u64) -> PathSegment {
        PathSegment {
            thread,
            start_ns,
            end_ns,
            waiting: None,
            asleep: false,
        }
    }

    #[test]
    fn a_stretch_asleep_is_waiting_not_the_threads_own_work() {
        let mut path = CriticalPath {
            segments: vec![own(0, 0, 100), own(1, 100, 200)],
            by_thread: Vec::new(),
            length_ns: 200,
        };
        // Thread 0 slept 20..60 and 90..150 (past its segment); thread 1 never.
        mark(&mut path, &[vec![(20, 60), (90, 150)], vec![]]);
        let parts: Vec<(usize, u64, u64, bool)> = path
            .segments
            .iter()
            .map(|s| (s.thread, s.start_ns, s.end_ns, s.asleep))
            .collect();
        assert_eq!(
            parts,
            vec![
                (0, 0, 20, false),
                (0, 20, 60, true),
                (0, 60, 90, false),
                (0, 90, 100, true),
                (1, 100, 200, false)
            ]
        );
        assert_eq!(path.by_thread, vec![(0, 50, 50), (1, 100, 0)]);
    }
}
