//! The critical path of the run and the knots (groups of threads that wait for one another).

use super::*;

// ---- the critical path ----

/// A thread as the critical path sees it.
impl Knot {
    /// "producer [12]: 3 threads waited 1.2 s for it (consumer [13], ...)": the words every view
    /// gives a knot.
    pub fn words(&self, profile: &Profile) -> String {
        let names = |v: &[usize]| {
            let mut shown: Vec<String> = v
                .iter()
                .take(4)
                .map(|&i| thread_label(profile, i))
                .collect();
            if v.len() > 4 {
                shown.push(format!("{} more", v.len() - 4));
            }
            shown.join(", ")
        };
        let one = self.threads.len() == 1;
        format!(
            "{}: {} other thread{} waited {} for {} ({}); {} waits on no thread outside",
            names(&self.threads),
            self.waiters.len(),
            if self.waiters.len() == 1 { "" } else { "s" },
            crate::util::fmt_ns(self.waited_ns),
            if one { "it" } else { "them" },
            names(&self.waiters),
            if one { "it" } else { "the group" },
        )
    }
}

/// An edge joins the wait-for graph of the knots when its waits add up to at least the run's
/// wall time divided by this (1%): a stray short wait does not tie two threads together.
pub(super) const KNOT_EDGE_SHARE_OF_WALL: u64 = 100;

/// The knots of the graph whose nodes are the `nthreads` threads and whose edges go from a
/// waiter to the thread it waited for (lock owner, waker), each with at least `min_ns` of waits.
/// Joins are left out: main waiting for its workers to end is how a program ends, not a knot.
/// The knots are the strongly connected components without an edge out that some edge comes in to.
pub fn knots(edges: &[Edge], nthreads: usize, min_ns: u64) -> Vec<Knot> {
    let mut out_edges: Vec<Vec<(usize, u64)>> = vec![Vec::new(); nthreads];
    for e in edges {
        if let Some(o) = e.other
            && o != e.waiter
            && e.waiter < nthreads
            && o < nthreads
            && e.kind != Some(WaitKind::Join)
            && e.wait_ns >= min_ns.max(1)
        {
            out_edges[e.waiter].push((o, e.wait_ns));
        }
    }
    let component = strongly_connected(&out_edges);
    let ncomp = component.iter().copied().max().map_or(0, |m| m + 1);
    let mut leaves = vec![false; ncomp];
    let mut waited = vec![0u64; ncomp];
    let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); ncomp];
    for (w, outs) in out_edges.iter().enumerate() {
        for &(o, ns) in outs {
            let (cw, co) = (component[w], component[o]);
            if cw != co {
                leaves[cw] = true;
                waited[co] += ns;
                if !waiters[co].contains(&w) {
                    waiters[co].push(w);
                }
            }
        }
    }
    let mut knots: Vec<Knot> = (0..ncomp)
        .filter(|&c| !leaves[c] && waited[c] > 0)
        .map(|c| {
            let mut w = waiters[c].clone();
            w.sort_unstable();
            Knot {
                threads: (0..nthreads).filter(|&t| component[t] == c).collect(),
                waiters: w,
                waited_ns: waited[c],
            }
        })
        .collect();
    knots.sort_by(|a, b| {
        b.waited_ns
            .cmp(&a.waited_ns)
            .then(a.threads.cmp(&b.threads))
    });
    knots
}

/// Each node's strongly connected component (Kosaraju, without recursion: thread counts can be
/// large).
pub(super) fn strongly_connected(out_edges: &[Vec<(usize, u64)>]) -> Vec<usize> {
    let n = out_edges.len();
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for root in 0..n {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&(w, _)) = out_edges[v].get(*next) {
                *next += 1;
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    let mut in_edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, outs) in out_edges.iter().enumerate() {
        for &(w, _) in outs {
            in_edges[w].push(v);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut count = 0;
    for &root in order.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        component[root] = count;
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            for &w in &in_edges[v] {
                if component[w] == usize::MAX {
                    component[w] = count;
                    stack.push(w);
                }
            }
        }
        count += 1;
    }
    component
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathThread {
    pub start_ns: u64,
    pub end_ns: u64,
    pub main: bool,
}

impl PathThread {
    pub(super) fn of(profile: &Profile, t: &ThreadStats) -> PathThread {
        PathThread {
            start_ns: t.start_mono_ns,
            end_ns: profile.thread_end_ns(t),
            main: t.flags & THREAD_MAIN != 0 && t.folded.is_none(),
        }
    }
}

/// A wait as the critical path sees it: the waiting thread and the one that woke it (or held
/// the lock), by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathWait {
    pub thread: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    pub other: Option<usize>,
    pub kind: WaitKind,
}

/// The critical path (Perfetto's rule, on the recorded waits): start where the run ends, on the
/// main thread (else the thread that ends last); walking back in time, a stretch where the
/// current thread did not wait is its own; where it waited for a known thread, the path goes on
/// in that thread from the moment the wait ended; where the other end is unknown, the wait is on
/// the path and the walk stays on the thread. Before a thread's start the path goes on in the
/// main thread (which created it, as far as the profile knows).
pub fn critical_path(threads: &[PathThread], waits: &[PathWait]) -> CriticalPath {
    let mut by_thread: Vec<Vec<&PathWait>> = vec![Vec::new(); threads.len()];
    for w in waits {
        if w.thread < threads.len() && w.start_ns < w.end_ns {
            by_thread[w.thread].push(w);
        }
    }
    for list in &mut by_thread {
        list.sort_by_key(|w| (w.end_ns, w.start_ns));
    }
    let main = threads.iter().position(|t| t.main);
    let Some(mut cur) = main.or_else(|| {
        threads
            .iter()
            .enumerate()
            .max_by_key(|(_, t)| t.end_ns)
            .map(|(i, _)| i)
    }) else {
        return CriticalPath::default();
    };
    let mut t = threads[cur].end_ns;
    let mut segments: Vec<PathSegment> = Vec::new();
    let mut jumped_at: Option<u64> = None;
    let push = |segments: &mut Vec<PathSegment>, thread, start: u64, end: u64, waiting| {
        if end > start {
            segments.push(PathSegment {
                thread,
                start_ns: start,
                end_ns: end,
                waiting,
                asleep: false,
            });
        }
    };
    for _ in 0..1_000_000 {
        let th = threads[cur];
        // The wait of `cur` that ended last before t (and began before it).
        let list = &by_thread[cur];
        let n = list.partition_point(|w| w.end_ns <= t);
        let straddling = list[n..]
            .iter()
            .filter(|w| w.start_ns < t)
            .max_by_key(|w| w.start_ns);
        let candidate = straddling.copied().or_else(|| {
            list[..n]
                .iter()
                .rev()
                .find(|w| w.start_ns < t && w.end_ns > th.start_ns)
                .copied()
        });
        let Some(w) = candidate.filter(|w| w.end_ns > th.start_ns || w.start_ns < t) else {
            push(&mut segments, cur, th.start_ns.min(t), t, None);
            t = th.start_ns.min(t);
            match main {
                Some(m) if m != cur && threads[m].start_ns < t => {
                    cur = m;
                    continue;
                }
                _ => break,
            }
        };
        let end = w.end_ns.min(t);
        push(&mut segments, cur, end, t, None);
        let other = w.other.filter(|&o| {
            o < threads.len() && o != cur && threads[o].start_ns < end && jumped_at != Some(end)
        });
        match other {
            Some(o) => {
                jumped_at = Some(end);
                cur = o;
                t = end;
            }
            None => {
                let start = w.start_ns.max(th.start_ns);
                push(&mut segments, cur, start, end, Some(w.kind));
                t = start;
                jumped_at = None;
            }
        }
        if t <= threads[cur].start_ns && main.is_none_or(|m| m == cur) {
            break;
        }
    }
    segments.reverse();
    let by_thread = crate::analysis::path_asleep::by_thread(&segments);
    CriticalPath {
        length_ns: segments.iter().map(|s| s.end_ns - s.start_ns).sum(),
        segments,
        by_thread,
    }
}
