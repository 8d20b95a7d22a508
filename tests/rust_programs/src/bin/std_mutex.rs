//! Contended `std::sync::Mutex` under rayon: every item takes one global lock and does most of its
//! work inside it, so threads queue on the lock (Rust's std waits with a futex since 1.62).
use rayon::prelude::*;
use stallscope_rust_programs::mix;
use std::collections::HashMap;
use std::sync::Mutex;

static HITS: Mutex<Option<HashMap<u64, u64>>> = Mutex::new(None);

#[inline(never)]
fn record_hit(key: u64) {
    let mut hits = HITS.lock().unwrap(); // MARK record_hit
    let map = hits.get_or_insert_with(HashMap::new);
    *map.entry(mix(key, 400) % 4096).or_insert(0) += 1;
    // Now and then the holder sleeps with the lock held: the others wait for it even on a
    // machine too busy to run them together, so the contention is certain.
    if key % 512 == 0 {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let items: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(400_000);
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().unwrap();
    (0..items).into_par_iter().for_each(|i| {
        let k = mix(i, 40);
        record_hit(k);
    });
    let n: u64 = HITS.lock().unwrap().as_ref().map_or(0, |m| m.values().sum());
    println!("hits {n}");
}
