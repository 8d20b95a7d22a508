//! `phases` and `heap_snapshots` in the report's JSON.

use super::*;

#[derive(Serialize)]
pub(super) struct Phase<'a> {
    pub(super) name: &'a str,
    pub(super) label: &'a str,
    pub(super) tid: u32,
    pub(super) depth: u32,
    pub(super) begin_ns: u64,
    pub(super) end_ns: u64,
    pub(super) wall_ns: u64,
    pub(super) alloc: PhaseAlloc,
    pub(super) heap_before: Option<Heap<'a>>,
    pub(super) heap_after: Option<Heap<'a>>,
}

#[derive(Serialize)]
pub(super) struct PhaseAlloc {
    pub(super) functions: Named<PhaseFunction>,
}

#[derive(Serialize)]
pub(super) struct PhaseFunction {
    pub(super) calls: u64,
    pub(super) bytes: u64,
    pub(super) time_ns: u64,
    pub(super) timed_calls: u64,
    pub(super) mean_ns: Option<f64>,
    pub(super) p99_ns: Option<f64>,
}

impl PhaseFunction {
    pub(super) fn of(f: &PhaseFn) -> PhaseFunction {
        PhaseFunction {
            calls: f.calls,
            bytes: f.bytes,
            time_ns: f.time_ns,
            timed_calls: f.timed_calls,
            mean_ns: f.mean_ns(),
            p99_ns: f.p99_ns,
        }
    }
}

impl<'a> Phase<'a> {
    pub(super) fn of(p: &'a PhaseSummary, start_mono_ns: u64) -> Phase<'a> {
        Phase {
            name: &p.name,
            label: &p.label,
            tid: p.tid,
            depth: p.depth,
            begin_ns: p.begin_ns,
            end_ns: p.end_ns,
            wall_ns: p.wall_ns(),
            alloc: PhaseAlloc {
                functions: Named(
                    p.fns
                        .iter()
                        .map(|f| (f.name, PhaseFunction::of(f)))
                        .collect(),
                ),
            },
            heap_before: p.heap_before.as_ref().map(|h| Heap::of(h, start_mono_ns)),
            heap_after: p.heap_after.as_ref().map(|h| Heap::of(h, start_mono_ns)),
        }
    }
}

#[derive(Serialize)]
pub(super) struct Heap<'a> {
    pub(super) seq: u32,
    pub(super) label: &'a str,
    pub(super) tid: u32,
    pub(super) t_ns: u64,
    pub(super) duration_ns: u64,
    pub(super) glibc: bool,
    pub(super) in_use_bytes: u64,
    pub(super) free_bytes: u64,
    pub(super) fastbin_bytes: u64,
    pub(super) top_bytes: u64,
    pub(super) mmap_bytes: u64,
    pub(super) arena_bytes: u64,
    pub(super) free_chunks: u64,
    pub(super) fastbin_chunks: u64,
    pub(super) fragmentation: f64,
    pub(super) arenas: Option<u64>,
    pub(super) rss_bytes: u64,
    pub(super) bins: Option<&'a [FreeBin]>,
}

impl<'a> Heap<'a> {
    pub(super) fn of(h: &'a HeapSnapshot, start_mono_ns: u64) -> Heap<'a> {
        Heap {
            seq: h.seq,
            label: &h.label,
            tid: h.tid,
            t_ns: h.mono_ns.saturating_sub(start_mono_ns),
            duration_ns: h.duration_ns,
            glibc: h.glibc,
            in_use_bytes: h.in_use_bytes(),
            free_bytes: h.free_bytes,
            fastbin_bytes: h.fastbin_bytes,
            top_bytes: h.top_bytes,
            mmap_bytes: h.mmap_bytes,
            arena_bytes: h.arena_bytes,
            free_chunks: h.all_free_chunks(),
            fastbin_chunks: h.fastbin_chunks,
            fragmentation: h.fragmentation(),
            arenas: h.info.as_ref().map(|i| i.arenas),
            rss_bytes: h.rss_bytes,
            bins: h.info.as_ref().map(|i| i.bins.as_slice()),
        }
    }
}
