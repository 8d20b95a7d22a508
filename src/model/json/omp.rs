//! `omp_regions` and `omp_runs` in the report's JSON.

use super::*;

#[derive(Serialize)]
pub(super) struct OmpRegionJson {
    pub(super) region: String,
    pub(super) address: String,
    pub(super) runs: u64,
    /// Team members per run, on average.
    pub(super) team: f64,
    pub(super) wall_ns: u64,
    /// The team's time at the closing barrier (load imbalance).
    pub(super) barrier_ns: u64,
    pub(super) barrier_share: f64,
    pub(super) fork_join_ns: u64,
}

#[derive(Serialize)]
pub(super) struct OmpRunJson {
    /// The thread that started the regions.
    pub(super) tid: u32,
    /// From the process's start.
    pub(super) begin_ns: u64,
    pub(super) end_ns: u64,
    /// Its longest region (TBB: the algorithm, `tbb::parallel_for`).
    pub(super) region: String,
    /// `OpenMP` or `TBB`.
    pub(super) runtime: &'static str,
    /// Regions in the run.
    pub(super) regions: u32,
    /// The team's share of its time in the run at the closing barriers.
    pub(super) barrier_share: f64,
}
