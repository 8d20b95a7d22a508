//! Before: a new scoped_threadpool::Pool per call (exa's tree view before ogham/exa#355 made one
//! per directory), so every call creates and joins its threads.
mod work;
use scoped_threadpool::Pool;

fn call(threads: u32, c: usize) -> u64 {
    let mut pool = Pool::new(threads);
    let mut out = [0u64; work::ITEMS];
    pool.scoped(|s| {
        for (i, slot) in out.iter_mut().enumerate() {
            s.execute(move || *slot = work::item((c * work::ITEMS + i) as u64, work::ITEM_LEN));
        }
    });
    out.iter().fold(0, |a, &b| a ^ b)
}

fn main() {
    let threads = work::threads();
    let sum = (0..work::CALLS).fold(0u64, |a, c| a ^ call(threads, c));
    println!("{} calls on {threads} threads: {sum:x}", work::CALLS);
}
