//! The records' and the file header's CRC-32 checksums: computed as the writer does, and rewritten
//! for a file edited on purpose.

use super::*;

/// Rewrites the file header's and every whole record's checksum as the writer would compute
/// them, so that a file edited on purpose (a test's damaged counters, a fuzzer's mutations) is
/// judged on its contents rather than refused for its checksums.
pub fn fix_checksums(bytes: &mut [u8]) {
    if bytes.len() < FILE_HEADER_SIZE {
        return;
    }
    let crc = crc32fast::hash(&bytes[..20]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    let mut pos = FILE_HEADER_SIZE;
    while let Some(head) = bytes.get(pos..pos + RECORD_HEADER_SIZE) {
        let size = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")) as usize;
        let start = pos + RECORD_HEADER_SIZE;
        let Some(payload) = bytes.get(start..start.saturating_add(size)) else {
            return;
        };
        let crc = record_crc(&bytes[pos..pos + 8], payload);
        bytes[pos + 8..pos + 12].copy_from_slice(&crc.to_le_bytes());
        pos = start.saturating_add(size.div_ceil(8) * 8);
    }
}

/// The checksum of a record: its type and size (`type_and_size`, 8 bytes) and its payload.
pub fn record_crc(type_and_size: &[u8], payload: &[u8]) -> u32 {
    if type_and_size.len() + payload.len() <= SMALL_CRC_BYTES {
        return !crc32_by_table(crc32_by_table(!0, type_and_size), payload);
    }
    let mut h = crc32fast::Hasher::new();
    h.update(type_and_size);
    h.update(payload);
    h.finalize()
}

/// Inputs up to this size are checksummed by `crc32_by_table`: crc32fast's first use detects the
/// CPU's features with `cpuid`, which traps to the hypervisor in a virtual machine, and the one
/// record `stallscope run` seals itself (40 bytes) would cost it 74 µs a run there. Larger inputs
/// take crc32fast's vector code.
pub(super) const SMALL_CRC_BYTES: usize = 256;

/// CRC-32 (IEEE 802.3, reflected, as zlib and crc32fast compute it), a byte at a time.
pub(super) const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Continues the running (not yet inverted) CRC `crc` over `bytes`.
pub(super) fn crc32_by_table(crc: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(crc, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}
