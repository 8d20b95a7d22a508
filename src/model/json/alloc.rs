//! `alloc` in the report's JSON: the allocator's calls, sizes, latencies, cross-thread frees and
//! allocation sites.

use super::*;

#[derive(Serialize)]
pub(super) struct SizeBucket {
    pub(super) min_bytes: u64,
    pub(super) max_bytes: u64,
    pub(super) count: u64,
}

#[derive(Serialize)]
pub(super) struct LatencyBucket {
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    pub(super) count: u64,
}

#[derive(Serialize)]
pub(super) struct Alloc<'a> {
    pub(super) total_calls: u64,
    /// How many threads called the allocator (those of folded groups counted).
    pub(super) threads: u64,
    pub(super) time_ns: u64,
    pub(super) share_of_thread_time: f64,
    /// Σ `threads[].alloc_cpu_ns`, and its share of the threads' CPU time (at most 1).
    pub(super) cpu_ns: u64,
    pub(super) share_of_cpu: f64,
    /// The CPU samples `cpu_ns` rests on (0: none, it comes from the calls' timing).
    pub(super) cpu_samples: u64,
    /// The report's header and threads table show `cpu_ns` as the allocator's time (enough CPU
    /// samples), else `time_ns`.
    pub(super) time_on_cpu: bool,
    pub(super) functions: Named<Function>,
    pub(super) by_function: Named<Function>,
    pub(super) size_histogram: Vec<SizeBucket>,
    pub(super) latency_histogram: Named<Vec<LatencyBucket>>,
    pub(super) sites: Vec<AllocSite<'a>>,
    pub(super) stack_sampling: Option<&'a StackSampling>,
    pub(super) cross_thread_frees: Option<CrossFrees>,
}

#[derive(Serialize)]
pub(super) struct CrossFrees {
    pub(super) calls: u64,
    pub(super) share: f64,
    pub(super) sampled_frees: u64,
    pub(super) sampled_cross: u64,
}

#[derive(Serialize)]
pub(super) struct AllocSite<'a> {
    pub(super) frames: Frames<'a>,
    /// An index into `frames`.
    pub(super) user_frame: usize,
    pub(super) function: &'static str,
    pub(super) calls: u64,
    pub(super) bytes: u64,
    pub(super) time_ns: u64,
    pub(super) samples: u64,
}

impl<'a> AllocSite<'a> {
    pub(super) fn of(site: &'a SiteSummary) -> AllocSite<'a> {
        AllocSite {
            frames: Frames(&site.frames),
            user_frame: site.user,
            function: site.function,
            calls: site.calls,
            bytes: site.bytes,
            time_ns: site.time_ns,
            samples: site.samples,
        }
    }
}
