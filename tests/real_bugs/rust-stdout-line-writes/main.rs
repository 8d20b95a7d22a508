//! Threads that print their results one line at a time, the pattern of sharkdp/fd#616 ("fd
//! performance decreases with increasing cores"): `println!` takes the process's stdout lock and,
//! stdout being line-buffered, makes a write(2) per line while holding it, so the threads meet
//! on the lock and on the system calls. `lines before N` prints each line with `println!`;
//! `lines after N` formats into a per-thread buffer and writes it out in large blocks under one
//! lock, the `BufWriter` the issue settled on.
//! Usage: lines before|after [THREADS]; THREADS defaults to STALLSCOPE_THREADS, else 2.

use std::io::Write;

const LINES: usize = 400_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let side = args.next().unwrap_or_default();
    if side != "before" && side != "after" {
        eprintln!("usage: lines before|after [THREADS]");
        std::process::exit(2);
    }
    let threads: usize = args
        .next()
        .or_else(|| std::env::var("STALLSCOPE_THREADS").ok())
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(2);
    let buffered = side == "after";
    let per_thread = LINES / threads;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let mut block = Vec::with_capacity(64 * 1024);
                let mut sum = 0u64;
                for i in 0..per_thread {
                    let n = (i * threads + t) as u64;
                    sum = sum.wrapping_add(n * n % 1_000_003);
                    if buffered {
                        writeln!(block, "/src/dir{}/file{}.rs {}", n % 97, n, sum).unwrap();
                        if block.len() >= 60 * 1024 {
                            std::io::stdout().lock().write_all(&block).unwrap();
                            block.clear();
                        }
                    } else {
                        println!("/src/dir{}/file{}.rs {}", n % 97, n, sum);
                    }
                }
                std::io::stdout().lock().write_all(&block).unwrap();
                sum
            })
        })
        .collect();
    let total: u64 = workers
        .into_iter()
        .map(|w| w.join().unwrap())
        .fold(0, u64::wrapping_add);
    eprintln!("{threads} threads, checksum {total}");
}
