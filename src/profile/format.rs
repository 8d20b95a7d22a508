//! Constants and layouts of the profile file, mirroring preload/ss_format.h (whose static asserts
//! pin the sizes used here). See docs/FORMAT.md.

pub const MAGIC: &[u8; 8] = b"STALLSCP";
pub const VERSION: u32 = 2;
pub const BYTE_ORDER_MARK: u32 = 0x0102_0304;

pub const FILE_HEADER_SIZE: usize = 24;
pub const RECORD_HEADER_SIZE: usize = 16;
pub const PROCESS_SIZE: usize = 160;
pub const LOCK_STATS_SIZE: usize = 64;
pub const THREAD_SIZE: usize = 2848;
pub const FLUSH_SIZE: usize = 32;
pub const END_SIZE: usize = 24;
pub const SUPERVISOR_SIZE: usize = 24;
pub const MODULE_SIZE: usize = 40;
pub const STACK_SIZE: usize = 16;
pub const MODULE_GONE_SIZE: usize = 16;
pub const ALLOC_SITES_SIZE: usize = 24;
pub const ALLOC_SITE_SIZE: usize = 48;
pub const LOCK_SITES_SIZE: usize = 16;
pub const LOCK_SITE_SIZE: usize = 40;
pub const ROLE_WAITER: u32 = 1;
pub const ROLE_HOLDER: u32 = 2;
pub const STACK_MAX_FRAMES: usize = 64;
pub const BUILD_ID_MAX: usize = 32;

pub const REC_PROCESS: u32 = 1;
pub const REC_THREAD: u32 = 2;
pub const REC_FLUSH: u32 = 3;
pub const REC_END: u32 = 4;
pub const REC_SUPERVISOR: u32 = 5;
pub const REC_MODULE: u32 = 6;
pub const REC_STACK: u32 = 7;
pub const REC_ALLOC_SITES: u32 = 8;
pub const REC_LOCK_SITES: u32 = 9;
pub const REC_CROSS_FREES: u32 = 24;
pub const CROSS_FREES_ENTRY_SIZE: usize = 24;
pub const REC_MODULE_GONE: u32 = 10;

pub const FN_COUNT: usize = 10;
/// Names of the allocator functions, in the order of `enum ss_fn`.
pub const FN_NAMES: [&str; FN_COUNT] = [
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "free",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
];
pub const FN_FREE: usize = 4;

/// The report's function groups (`enum ss_group`) and which functions each sums.
pub const GROUP_COUNT: usize = 5;
pub const GROUPS: [(&str, &[usize]); GROUP_COUNT] = [
    ("malloc", &[0]),
    ("calloc", &[1]),
    ("realloc", &[2, 3]),
    ("free", &[4]),
    ("aligned", &[5, 6, 7, 8, 9]),
];

pub const SIZE_FINE_BUCKETS: usize = 32;
pub const SIZE_BUCKETS: usize = 88;
pub const LAT_BUCKETS: usize = 40;

pub const THREAD_ENDED: u32 = 1;
pub const THREAD_MAIN: u32 = 2;
pub const THREAD_LOCKS_OVERFLOW: u32 = 4;
/// The thread blocked the sampling signal for part of its life: its running time then comes
/// from the kernel's CPU clock (samples of kind `Kernel`), unclassified.
pub const THREAD_SIGNAL_BLOCKED: u32 = 8;

/// Threads folded into one group per name (preload/ss_format.h, `SS_REC_FOLDED`): a
/// `FOLDED_SIZE`-byte header (threads, reserved, summed life in ns), then a thread record.
pub const REC_FOLDED: u32 = 25;
pub const FOLDED_SIZE: usize = 16;

pub const END_EXIT: u32 = 1;
pub const END_UNDERSCORE_EXIT: u32 = 2;
pub const END_EXEC: u32 = 3;
pub const END_DESTRUCTOR: u32 = 4;

pub const TIMING_EXACT: u32 = 1;

/// The inclusive byte range of a request-size bucket.
pub fn size_bucket_range(bucket: usize) -> (u64, u64) {
    if bucket < SIZE_FINE_BUCKETS {
        let hi = 8 * (bucket as u64 + 1);
        (if bucket == 0 { 0 } else { hi - 7 }, hi)
    } else {
        let k = (bucket - SIZE_FINE_BUCKETS) as u32;
        let lo = 1u64 << (8 + k);
        let hi = if k + 9 >= 64 {
            u64::MAX
        } else {
            1u64 << (9 + k)
        };
        (lo + 1, hi)
    }
}

/// The half-open nanosecond range `[min, max)` of a latency bucket.
pub fn latency_bucket_range(bucket: usize) -> (u64, u64) {
    let lo = if bucket == 0 { 0 } else { 1u64 << bucket };
    (lo, 1u64 << (bucket + 1))
}

pub fn lock_kind_name(kind: u32) -> &'static str {
    match kind {
        1 => "mutex",
        2 => "rwlock-read",
        3 => "rwlock-write",
        4 => "spinlock",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_buckets_tile_the_range_without_gaps() {
        let mut next = 0u64;
        for b in 0..SIZE_BUCKETS {
            let (lo, hi) = size_bucket_range(b);
            assert_eq!(lo, next, "bucket {b} starts where the previous ended");
            assert!(hi >= lo);
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
        assert_eq!(size_bucket_range(2), (17, 24));
        assert_eq!(size_bucket_range(31), (249, 256));
        assert_eq!(size_bucket_range(32), (257, 512));
    }
}
