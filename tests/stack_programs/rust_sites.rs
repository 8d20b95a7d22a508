// A Rust program for tests/stacks_rust.rs: allocations from a named function, through Vec.
use std::hint::black_box;

#[inline(never)]
fn make_vectors(n: usize) -> usize {
    let mut total = 0;
    for i in 0..n {
        let v: Vec<u64> = Vec::with_capacity(16 + i % 8); // MARK make_vectors
        total += black_box(v).capacity();
    }
    total
}

fn main() {
    println!("{}", make_vectors(200_000));
}
