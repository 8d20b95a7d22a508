//! `wait_for` in the report's JSON (docs/WAITFOR.md): edges, object names, critical path.

use crate::analysis::Analysis;
use crate::analysis::waitfor::{Edge, PathSegment};
use crate::profile::Profile;
use crate::symbols::Frame;
use crate::util::ratio;
use serde::Serialize;

/// Segments listed at most; the sums per thread cover the whole path.
const MAX_SEGMENTS: usize = 2000;

#[derive(Serialize)]
pub struct WaitForJson {
    waits: u64,
    dropped: u64,
    edges: Vec<EdgeJson>,
    objects: Vec<ObjectJson>,
    critical_path: PathJson,
    knots: Vec<KnotJson>,
}

#[derive(Serialize)]
struct KnotJson {
    threads: Vec<ThreadRef>,
    waiters: Vec<ThreadRef>,
    waited_ns: u64,
}

#[derive(Serialize)]
struct ThreadRef {
    serial: u32,
    tid: u32,
}

fn thread_ref(p: &Profile, i: usize) -> Option<ThreadRef> {
    p.threads.get(i).map(|t| ThreadRef {
        serial: t.serial,
        tid: t.tid,
    })
}

#[derive(Serialize)]
struct EdgeJson {
    waiter: Option<ThreadRef>,
    /// The thread at the other end (null: unknown).
    other: Option<ThreadRef>,
    kind: &'static str,
    /// "0x..." (null for a join).
    object: Option<String>,
    object_name: Option<String>,
    /// The waits with a part on this edge (a mutex wait that outlasted its first holder has a
    /// part with each later holder), and of them those that began on it (summed over the edges:
    /// the number of waits).
    waits: u64,
    waits_begun: u64,
    /// The parts' time.
    wait_ns: u64,
    /// Of wait_ns, the tails after the waker's wake (futex and mutex waits that know it): the
    /// waiters' wake-up, outside `meanwhile`'s window.
    woken_tail_ns: u64,
    other_sampled_ns: u64,
    meanwhile: Vec<ActivityJson>,
}

#[derive(Serialize)]
struct ActivityJson {
    category: &'static str,
    function: String,
    user_frame: Option<String>,
    ns: u64,
    share: f64,
    /// On a CPU inside an I/O call (`fdatasync`'s kernel work): computation done for the I/O.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    in_io_call: bool,
}

#[derive(Serialize)]
struct ObjectJson {
    address: String,
    name: String,
    named_by: &'static str,
}

#[derive(Serialize)]
struct PathJson {
    length_ns: u64,
    by_thread: Vec<PathThreadJson>,
    segments: Vec<SegmentJson>,
    segments_left_out: usize,
}

#[derive(Serialize)]
struct PathThreadJson {
    thread: Option<ThreadRef>,
    own_ns: u64,
    waiting_ns: u64,
}

#[derive(Serialize)]
struct SegmentJson {
    thread: Option<ThreadRef>,
    start_ns: u64,
    end_ns: u64,
    waiting: Option<&'static str>,
}

impl WaitForJson {
    pub fn of(a: &Analysis) -> Option<WaitForJson> {
        let w = a.waitfor.as_ref()?;
        let p = &a.profile;
        let start = p.process.start_mono_ns;
        let edge = |e: &Edge| EdgeJson {
            waiter: thread_ref(p, e.waiter),
            other: e.other.and_then(|i| thread_ref(p, i)),
            kind: e.kind.map_or("?", |k| k.name()),
            object: (e.object != 0).then(|| format!("{:#x}", e.object)),
            object_name: (e.object != 0).then(|| a.object_name(e.object)),
            waits: e.waits,
            waits_begun: e.waits_begun,
            wait_ns: e.wait_ns,
            woken_tail_ns: e.woken_tail_ns,
            other_sampled_ns: e.other_sampled_ns,
            meanwhile: e
                .activities
                .iter()
                .map(|x| ActivityJson {
                    category: x.category.key(),
                    function: x.function.clone(),
                    user_frame: x.frame.as_ref().map(Frame::display),
                    ns: x.ns,
                    share: ratio(x.ns, e.other_sampled_ns),
                    in_io_call: x.in_io_call,
                })
                .collect(),
        };
        let segment = |s: &PathSegment| SegmentJson {
            thread: thread_ref(p, s.thread),
            start_ns: s.start_ns.saturating_sub(start),
            end_ns: s.end_ns.saturating_sub(start),
            waiting: s.waiting.map(|k| k.name()).or(s.asleep.then_some("asleep")),
        };
        let path = &w.critical_path;
        Some(WaitForJson {
            waits: w.waits,
            dropped: w.dropped,
            edges: w.edges.iter().map(edge).collect(),
            objects: w
                .names
                .iter()
                .map(|n| ObjectJson {
                    address: format!("{:#x}", n.object),
                    name: n.name.clone(),
                    named_by: n.how,
                })
                .collect(),
            knots: w
                .knots
                .iter()
                .map(|k| KnotJson {
                    threads: k.threads.iter().filter_map(|&i| thread_ref(p, i)).collect(),
                    waiters: k.waiters.iter().filter_map(|&i| thread_ref(p, i)).collect(),
                    waited_ns: k.waited_ns,
                })
                .collect(),
            critical_path: PathJson {
                length_ns: path.length_ns,
                by_thread: path
                    .by_thread
                    .iter()
                    .map(|&(i, own_ns, waiting_ns)| PathThreadJson {
                        thread: thread_ref(p, i),
                        own_ns,
                        waiting_ns,
                    })
                    .collect(),
                segments: path
                    .segments
                    .iter()
                    .take(MAX_SEGMENTS)
                    .map(segment)
                    .collect(),
                segments_left_out: path.segments.len().saturating_sub(MAX_SEGMENTS),
            },
        })
    }
}
