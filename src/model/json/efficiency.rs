//! `parallel_efficiency` and `working_efficiency` in the report's JSON.

use super::*;

#[derive(Serialize)]
pub(super) struct Efficiency {
    pub(super) compute_ns: u64,
    pub(super) wall_ns: u64,
    pub(super) threads: usize,
    pub(super) cpus: u32,
    pub(super) value: f64,
}

/// The working threads' efficiency (`analysis::efficiency`), the figure the parallel-efficiency
/// finding reads.
#[derive(Serialize)]
pub(super) struct WorkingEfficiencyJson {
    pub(super) value: f64,
    pub(super) compute_ns: u64,
    pub(super) basis_ns: u64,
    /// What `basis_ns` is: `awake_not_waiting`, `wall_x_threads` or `cpu_alloc_lock`.
    pub(super) basis: &'static str,
    /// The thread-state samples it comes from (0: from CPU times, not samples).
    pub(super) samples: u64,
    pub(super) threads: usize,
    pub(super) cpus: u32,
    /// The time each part is a share of.
    pub(super) parts_basis_ns: u64,
    /// Each state's time that is not computation.
    pub(super) parts: Named<u64>,
    pub(super) unattributed_ns: u64,
}

impl WorkingEfficiencyJson {
    pub(super) fn of(e: &crate::analysis::efficiency::WorkingEfficiency) -> Self {
        WorkingEfficiencyJson {
            value: e.value,
            compute_ns: e.compute_ns as u64,
            basis_ns: e.basis_ns as u64,
            basis: e.basis.key(),
            samples: e.samples,
            threads: e.threads,
            cpus: e.cpus,
            parts_basis_ns: e.parts_basis_ns as u64,
            parts: Named(
                e.parts
                    .iter()
                    .map(|&(c, ns)| (c.key(), ns as u64))
                    .collect(),
            ),
            unattributed_ns: e.unattributed_ns as u64,
        }
    }
}
