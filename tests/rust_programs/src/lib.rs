//! What the programs of src/bin share: a few rounds of arithmetic that the optimizer keeps.

/// `rounds` rounds of a linear congruential step with a shift.
#[inline(never)]
pub fn mix(mut x: u64, rounds: u32) -> u64 {
    for _ in 0..rounds {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x ^= x >> 29;
    }
    x
}
