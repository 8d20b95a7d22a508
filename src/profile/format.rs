//! The profile file's constants, enumerations and layouts. They are generated at build time from
//! preload/ss_format.h, the one definition both the interposer and this reader follow (build.rs,
//! build/generate_rust.c): record type numbers, the sizes of fixed parts and entries, the offsets
//! of the counts and lengths that size a record, enumerations and flags. See docs/FORMAT.md.

include!(concat!(env!("OUT_DIR"), "/format_generated.rs"));

/// Whether a record type is one this reader knows.
pub fn record_type_known(rtype: u32) -> bool {
    RECORD_TYPES.iter().any(|&(t, _)| t == rtype)
}

/// The oldest format version this reader reads: version 2 differs from 3 only in its thread-state
/// samples, 32 bytes without the `object` field (read as 0); 3 from 4 only in having no Python
/// records; 4 from 5 only in having no TITLE or PY_THREAD records.
pub const OLDEST_VERSION: u32 = 2;

/// The size of a thread-state sample (`struct ss_sample`) in a file of format `version`.
pub fn sample_size(version: u32) -> usize {
    if version == 2 { 32 } else { SAMPLE_SIZE }
}

/// Whether a payload of `size` bytes is one the record's layout allows in a file of format
/// `version`, given `prefix`, the start of the payload as far as it is known (its counts and
/// lengths decide the size).
pub fn size_fits_layout(rtype: u32, size: usize, prefix: &[u8], version: u32) -> bool {
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
        REC_PROCESS => lengths(PROCESS_SIZE, &[PROCESS_CMDLINE_LEN_AT, PROCESS_EXE_LEN_AT]),
        REC_THREAD => counted(THREAD_SIZE, LOCK_STATS_SIZE, THREAD_NLOCKS_AT),
        REC_MODULE => {
            lengths(MODULE_SIZE, &[MODULE_BUILD_ID_LEN_AT, MODULE_PATH_LEN_AT])
                && u32_at(MODULE_BUILD_ID_LEN_AT).is_none_or(|n| n <= BUILD_ID_MAX)
        }
        REC_STACK => {
            counted(STACK_SIZE, 8, STACK_DEPTH_AT)
                && size > STACK_SIZE
                && size <= STACK_SIZE + 8 * STACK_MAX_FRAMES
        }
        REC_ALLOC_SITES => counted(ALLOC_SITES_SIZE, ALLOC_SITE_SIZE, ALLOC_SITES_COUNT_AT),
        REC_LOCK_SITES => counted(LOCK_SITES_SIZE, LOCK_SITE_SIZE, LOCK_SITES_COUNT_AT),
        REC_HEAP => lengths(HEAP_SIZE, &[HEAP_XML_LEN_AT]),
        REC_SAMPLES => {
            counted(SAMPLES_SIZE, sample_size(version), SAMPLES_COUNT_AT) && size > SAMPLES_SIZE
        }
        REC_WAITS => counted(WAITS_SIZE, WAIT_SIZE, WAITS_COUNT_AT),
        REC_SCHED => counted(SCHED_SIZE, SCHED_POINT_SIZE, SCHED_COUNT_AT) && size > SCHED_SIZE,
        REC_CROSS_FREES => size > 0 && size.is_multiple_of(CROSS_FREES_ENTRY_SIZE),
        // The group's header, then a thread record and its locks.
        REC_FOLDED => {
            let nlocks_at = FOLDED_SIZE + THREAD_NLOCKS_AT;
            counted(FOLDED_SIZE + THREAD_SIZE, LOCK_STATS_SIZE, nlocks_at)
        }
        // Records without a variable part: exactly their fixed part.
        REC_FLUSH => size == FLUSH_SIZE,
        REC_END => size == END_SIZE,
        REC_SUPERVISOR => size == SUPERVISOR_SIZE,
        REC_MODULE_GONE => size == MODULE_GONE_SIZE,
        REC_PHASE => size == PHASE_SIZE,
        REC_SAMPLING => size == SAMPLING_SIZE,
        REC_ATTACH => size == ATTACH_SIZE,
        REC_PYTHON => size == PYTHON_SIZE,
        REC_PY_CODE => lengths(
            PY_CODE_SIZE,
            &[
                PY_CODE_NAME_LEN_AT,
                PY_CODE_QUALNAME_LEN_AT,
                PY_CODE_FILE_LEN_AT,
                PY_CODE_TABLE_LEN_AT,
            ],
        ),
        REC_PY_STACK => {
            counted(PY_STACK_SIZE, PY_FRAME_SIZE, PY_STACK_COUNT_AT) && size > PY_STACK_SIZE
        }
        REC_TITLE => lengths(TITLE_SIZE, &[TITLE_LEN_AT]) && size <= TITLE_SIZE + TITLE_MAX,
        REC_PY_THREAD => {
            lengths(PY_THREAD_SIZE, &[PY_THREAD_NAME_LEN_AT])
                && size > PY_THREAD_SIZE
                && size <= PY_THREAD_SIZE + PY_THREAD_NAME_MAX
        }
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
