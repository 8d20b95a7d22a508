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

pub const END_EXIT: u32 = 1;
pub const END_UNDERSCORE_EXIT: u32 = 2;
pub const END_EXEC: u32 = 3;
pub const END_DESTRUCTOR: u32 = 4;

pub const TIMING_EXACT: u32 = 1;

/// Whether a record type is one this reader knows.
pub fn record_type_known(rtype: u32) -> bool {
    matches!(
        rtype,
        REC_PROCESS
            | REC_THREAD
            | REC_FLUSH
            | REC_END
            | REC_SUPERVISOR
            | REC_MODULE
            | REC_STACK
            | REC_ALLOC_SITES
            | REC_LOCK_SITES
            | REC_MODULE_GONE
            | REC_CROSS_FREES
    ) || matches!(rtype, 20..=23)
}

/// Whether a payload of `size` bytes is one the record's layout allows, given `prefix`, the
/// start of the payload as far as it is known (its counts and lengths decide the size).
pub fn size_fits_layout(rtype: u32, size: usize, prefix: &[u8]) -> bool {
    let u32_at = |at: usize| {
        prefix
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
    };
    // A fixed part followed by `count` entries of `each` bytes, the count at `count_at`.
    let counted = |base: usize, each: usize, count_at: usize| {
        size >= base
            && (size - base).is_multiple_of(each)
            && u32_at(count_at)
                .is_none_or(|n| n.checked_mul(each).and_then(|b| b.checked_add(base)) == Some(size))
    };
    // A fixed part followed by byte strings whose lengths are at `at`.
    let lengths = |base: usize, at: &[usize]| {
        size >= base
            && (prefix.len() < base
                || base + at.iter().map(|&o| u32_at(o).unwrap_or(0)).sum::<usize>() == size)
    };
    match rtype {
        REC_PROCESS => lengths(PROCESS_SIZE, &[152, 156]),
        REC_THREAD => counted(THREAD_SIZE, LOCK_STATS_SIZE, 12),
        REC_FLUSH => size == FLUSH_SIZE,
        REC_END => size == END_SIZE,
        REC_SUPERVISOR => size == SUPERVISOR_SIZE,
        REC_MODULE => {
            lengths(MODULE_SIZE, &[32, 36]) && u32_at(32).is_none_or(|n| n <= BUILD_ID_MAX)
        }
        REC_STACK => {
            counted(STACK_SIZE, 8, 4)
                && size <= STACK_SIZE + 8 * STACK_MAX_FRAMES
                && size > STACK_SIZE
        }
        REC_ALLOC_SITES => counted(ALLOC_SITES_SIZE, ALLOC_SITE_SIZE, 0),
        REC_LOCK_SITES => counted(LOCK_SITES_SIZE, LOCK_SITE_SIZE, 0),
        REC_MODULE_GONE => size == MODULE_GONE_SIZE,
        REC_CROSS_FREES => size > 0 && size.is_multiple_of(CROSS_FREES_ENTRY_SIZE),
        20 => size == super::phases::PHASE_SIZE,
        21 => lengths(super::phases::HEAP_SIZE, &[180]),
        22 => size == 48,
        23 => counted(8, 32, 4) && size > 8,
        _ => false,
    }
}

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
