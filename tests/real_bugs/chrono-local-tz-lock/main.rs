//! Threads that turn UTC timestamps into local time and format them, the benchmark of
//! chronotope/chrono#277 ("Local is horribly slow when used in multi-threads"). `before/` builds
//! this with chrono 0.4.19, whose `Local` asks the C library (`localtime_r`, through the `time`
//! 0.1 crate), `after/` with chrono 0.4.20, which reads the time zone file itself and keeps it per
//! thread (chronotope/chrono#677).
//! Usage: chrono_local [THREADS]; THREADS defaults to STALLSCOPE_THREADS, else 2.

use chrono::{Local, TimeZone, Utc};

const CONVERSIONS: usize = 600_000;

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("STALLSCOPE_THREADS").ok())
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(2);
    let per_thread = CONVERSIONS / threads;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let mut bytes = 0usize;
                for i in 0..per_thread {
                    let secs = 1_500_000_000 + (i * 37 + t * 11) as i64 * 60;
                    let local = Utc.timestamp(secs, 0).with_timezone(&Local);
                    bytes += local.format("%Y-%m-%d %H:%M:%S").to_string().len();
                }
                bytes
            })
        })
        .collect();
    let total: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    println!("{threads} threads, {total} bytes formatted");
}
