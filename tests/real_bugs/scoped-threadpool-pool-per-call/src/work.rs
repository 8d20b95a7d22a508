//! The work of one call, as exa's tree view did per directory: a few independent items (here,
//! checksums of a buffer) split among the pool's threads.

pub const CALLS: usize = 2000;
pub const ITEMS: usize = 2;

/// A checksum of `len` bytes derived from `seed`: about 50 microseconds of arithmetic.
pub fn item(seed: u64, len: usize) -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut sum = 0u64;
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sum = sum.wrapping_add(x >> 11);
    }
    sum
}

pub const ITEM_LEN: usize = 30_000;

pub fn threads() -> u32 {
    std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2)
}
