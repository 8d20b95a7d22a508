//! After: one scoped_threadpool::Pool for the whole run, each call borrowing it (the fix of
//! ogham/exa#355: "create worker threads only once").
mod work;
use scoped_threadpool::Pool;

fn call(pool: &mut Pool, c: usize) -> u64 {
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
    let mut pool = Pool::new(threads);
    let sum = (0..work::CALLS).fold(0u64, |a, c| a ^ call(&mut pool, c));
    println!("{} calls on {threads} threads: {sum:x}", work::CALLS);
}
