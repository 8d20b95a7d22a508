//! Two plain threads add to one counter under a `std::sync::Mutex` (no rayon, no other crate):
//! Rust's std waits on the mutex's own futex word through syscall(SYS_futex). Built with debug
//! info (the release profile here) and without it (profile `nodebug`: std's symbols only, as a
//! default `cargo build --release` ships), see tests/distro_runtimes.rs. Each hold does some
//! work, so the other thread waits for the lock. `quiet` gives each thread its own mutex: the
//! same calls, no contention (the control). Every 16th hold also sleeps 0.5 ms, so that the other
//! thread waits for the lock (asleep) even on a machine too busy to run both at once.
//!   distro_std_mutex [contended|quiet] [threads] [rounds]
use stallscope_rust_programs::mix;
use std::sync::Mutex;

static COUNTER: Mutex<u64> = Mutex::new(0);

/// `n` rounds of arithmetic the optimizer keeps (a bare multiply-add recurrence it folds).
#[inline(never)]
fn work(x: u64, n: u32) -> u64 {
    std::hint::black_box(mix(x, n))
}

#[inline(never)]
fn add_under(lock: &Mutex<u64>, x: u64, round: u64) {
    let mut v = lock.lock().unwrap(); // MARK lock
    *v += work(x, 70000) & 1;
    if round % 16 == 0 {
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let quiet = args.next().as_deref() == Some("quiet");
    let threads: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let own: Vec<Mutex<u64>> = (0..threads).map(|_| Mutex::new(0)).collect();
    std::thread::scope(|s| {
        for t in 0..threads {
            let lock = if quiet { &own[t as usize] } else { &COUNTER };
            s.spawn(move || {
                let mut x = t + 1;
                for i in 0..rounds {
                    x = work(x, 7000);
                    add_under(lock, x, i);
                }
            });
        }
    });
    let total = *COUNTER.lock().unwrap() + own.iter().map(|m| *m.lock().unwrap()).sum::<u64>();
    println!("{total}");
}
