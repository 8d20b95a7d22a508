//! Threads that share one `regex::Regex` and search many short haystacks with it, the workload of
//! rust-lang/regex#934. The main thread uses the regex first, so it owns the pool's fast path and
//! every worker takes its search cache from the pool's shared stack. `before/` builds this with
//! regex 1.9.4 (regex-automata 0.3.7: one `Mutex<Vec<Cache>>`), `after/` with regex 1.9.5
//! (regex-automata 0.3.8: the stacks sharded by thread, rust-lang/regex#1080).
//! Usage: regex_pool [THREADS]; THREADS defaults to STALLSCOPE_THREADS, else 2.

use regex::Regex;
use std::sync::Arc;

const SEARCHES: usize = 20_000_000;

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("STALLSCOPE_THREADS").ok())
        .and_then(|s| s.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(2);
    let re = Arc::new(Regex::new(r"^[a-z]+@[a-z]+\.(com|org|net)$").unwrap());
    // The first search makes the main thread the pool's owner.
    assert!(re.is_match("owner@example.com"));
    let haystacks: Arc<Vec<String>> = Arc::new(
        (0..1000)
            .map(|i| match i % 3 {
                0 => format!("user{}@example.com", i),
                1 => format!("user@host{}.org", i),
                _ => format!("abc@def.{}", if i % 2 == 0 { "net" } else { "xyz" }),
            })
            .collect(),
    );
    let per_thread = SEARCHES / threads;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let re = Arc::clone(&re);
            let haystacks = Arc::clone(&haystacks);
            std::thread::spawn(move || {
                let mut matches = 0u64;
                for i in 0..per_thread {
                    if re.is_match(&haystacks[(i * 7 + t) % haystacks.len()]) {
                        matches += 1;
                    }
                }
                matches
            })
        })
        .collect();
    let total: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    println!("{threads} threads, {total} matches");
}
