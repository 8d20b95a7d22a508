//! A balanced rayon reduction with no lock: it should scale, and stallscope should stay quiet
//! about locks and spinning (rayon's idle workers yield and sleep by design).
use rayon::prelude::*;
use stallscope_rust_programs::mix;

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let items: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(400_000);
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().unwrap();
    let mut total = 0u64;
    // Several parallel rounds with a short serial step between them: the workers go idle
    // (yield, then sleep) and wake again, as real rayon programs do.
    for round in 0..8u64 {
        total = total.wrapping_add(
            (0..items / 8)
                .into_par_iter()
                .map(|i| mix(i ^ round, 440))
                .reduce(|| 0, u64::wrapping_add),
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!("total {total}");
}
