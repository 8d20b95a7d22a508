//! A wait's parts: a mutex wait that outlasted its first holder cut where other waiters took the
//! mutex, so that each part names the thread that held it then.

use super::*;

pub(super) struct ResolvedWait {
    pub(super) waiter: usize,
    pub(super) other: Option<usize>,
    pub(super) wait: Wait,
}

/// One part of a wait: the stretch of it that the waiter waited for one thread. A wait has one
/// part, except a mutex wait that outlasted its first holder (holder_pieces).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Piece {
    /// Index of the wait in the resolved waits.
    pub(super) wait: usize,
    pub(super) other: Option<usize>,
    pub(super) other_tid: Option<u32>,
    /// Its share of the wait's time: the parts of a wait add up to the wait.
    pub(super) span_ns: u64,
    /// Where the other thread's samples stand for what the waiter waited for (from, to): while
    /// it held the lock, up to its release's wake.
    pub(super) window: (u64, u64),
    /// Of `span_ns`, the waiter's own wake-up after the release that let it in (its last part).
    pub(super) tail_ns: u64,
    /// The wait's first part (one per wait: their count is the number of waits).
    pub(super) first: bool,
}

/// Whether a wait passes a lock from one holder to the next: a pthread mutex's, whose other
/// waiters' acquisitions say who held it after its first holder.
pub(super) fn hands_over(w: &Wait) -> bool {
    w.kind == WaitKind::Lock && w.lock_kind == Some(LockKind::Mutex) && w.object != 0
}

/// The waits' parts. A wait records the mutex's owner when it began; with more than two threads
/// the mutex often changes hands before it ends, and the first holder may be long gone (asleep,
/// writing outside the lock) while the waiter still waits. Every contended acquisition of the
/// mutex is itself a recorded wait whose end is the acquisition and whose wake (where known) is
/// the release before it, so a wait that other threads' acquisitions fall inside is cut there:
/// its first holder up to the release that let the next one in, each next one from its
/// acquisition to the release after it, the last up to the wake that let the waiter in. The
/// wake-up between a release and the next acquisition goes with the part of the thread that
/// took the lock then (the waiter waited for it to take and release it), outside its window.
/// An acquisition that did not wait (the lock free at that instant) is not recorded: its hold
/// stays with the holder before it.
pub(super) fn holder_pieces(
    resolved: &[ResolvedWait],
    tid_of: impl Fn(usize) -> Option<u32>,
) -> Vec<Piece> {
    let mut acquired: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, r) in resolved.iter().enumerate() {
        if hands_over(&r.wait) {
            acquired.entry(r.wait.object).or_default().push(i);
        }
    }
    for list in acquired.values_mut() {
        list.sort_by_key(|&i| (resolved[i].wait.end_mono_ns, i));
    }
    // A thread that waits for the mutex does not hold it: a holder's window ends at the latest
    // where its own next wait for the mutex begins (what the holder did after it let go, until
    // a thread that found the lock free released it to the next waiter, is not known).
    let mut waits_of: HashMap<(u64, usize), Vec<u64>> = HashMap::new();
    for list in acquired.values() {
        for &i in list {
            let r = &resolved[i];
            waits_of
                .entry((r.wait.object, r.waiter))
                .or_default()
                .push(r.wait.start_mono_ns);
        }
    }
    for starts in waits_of.values_mut() {
        starts.sort_unstable();
    }
    let held_until = |object: u64, holder: Option<usize>, (from, to): (u64, u64)| {
        let next = holder
            .and_then(|h| waits_of.get(&(object, h)))
            .and_then(|starts| starts.get(starts.partition_point(|&t| t < from)).copied());
        (from, next.map_or(to, |n| to.min(n)).max(from))
    };
    let mut out = Vec::with_capacity(resolved.len());
    for (i, r) in resolved.iter().enumerate() {
        let w = &r.wait;
        let (start, end) = (w.start_mono_ns, w.end_mono_ns.max(w.start_mono_ns));
        let woken = w.woken_at_ns().min(end);
        let recorded = (r.other, r.other.and(w.other_tid));
        let takers: Vec<usize> = match acquired.get(&w.object).filter(|_| hands_over(w)) {
            Some(list) => {
                let from = list.partition_point(|&j| resolved[j].wait.end_mono_ns <= start);
                list[from..]
                    .iter()
                    .copied()
                    .take_while(|&j| resolved[j].wait.end_mono_ns < end)
                    .filter(|&j| resolved[j].waiter != r.waiter)
                    .collect()
            }
            None => Vec::new(),
        };
        let object = w.object;
        let mut parts: Vec<Piece> = Vec::with_capacity(takers.len() + 1);
        let (mut holder, mut part_from, mut held_from) = (recorded, start, start);
        for &j in &takers {
            let x = &resolved[j].wait;
            let released = x.woken_at_ns().clamp(part_from, end);
            parts.push(Piece {
                wait: i,
                other: holder.0,
                other_tid: holder.1,
                span_ns: released - part_from,
                window: held_until(object, holder.0, (held_from, released.max(held_from))),
                tail_ns: 0,
                first: false,
            });
            let taker = resolved[j].waiter;
            holder = (Some(taker), tid_of(taker));
            part_from = released;
            held_from = x.end_mono_ns;
        }
        let span_ns = end - part_from;
        parts.push(Piece {
            wait: i,
            other: holder.0,
            other_tid: holder.1,
            span_ns,
            window: if takers.is_empty() {
                (held_from, woken.max(held_from))
            } else {
                held_until(object, holder.0, (held_from, woken.max(held_from)))
            },
            tail_ns: (end - woken).min(span_ns),
            first: false,
        });
        // A holder whose release came before the wait began (the next one took the lock as it
        // began) held none of it: no part. The last part stays, the wait's end being its.
        let last = parts.len() - 1;
        let mut kept = parts
            .into_iter()
            .enumerate()
            .filter(|(k, p)| p.span_ns > 0 || *k == last)
            .map(|(_, p)| p);
        if let Some(mut p) = kept.next() {
            p.first = true;
            out.push(p);
        }
        out.extend(kept);
    }
    out
}
