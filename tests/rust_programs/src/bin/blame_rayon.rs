//! rayon's join, scope and parallel iterators, each in a balanced and an unbalanced variant
//! (tests/blame_constructs.rs; tests/blame_programs/README.md): `blame_rayon CONSTRUCT VARIANT`
//! with CONSTRUCT `join`, `scope` or `par_iter` and VARIANT `balanced` or `unbalanced`, on a pool
//! of 2 threads. In the unbalanced variant one thread runs a `culprit_*` function while the other
//! waits for it inside the construct.
use rayon::prelude::*;
use std::hint::black_box;

// The work: `us` microseconds on the 2-core test machine (a dependent chain of divisions, as
// tests/blame_programs/burn.h), written out in each function rather than in a helper or a macro:
// the debug info names an inlined helper as a frame of its own and puts a macro's code at the
// macro's lines, and the samples must name the function that runs the work, at its own line. The
// constants differ so that LLVM's function merging cannot make the culprit and the other work one
// function.

#[inline(never)]
fn culprit_join_half(mut x: f64, us: u64) -> f64 {
    for _ in 0..us * 180 {
        x = x * 1.0000001 + 0.5 / (x + 1.0);
    }
    black_box(x)
}

#[inline(never)]
fn culprit_long_spawn(mut x: f64, us: u64) -> f64 {
    for _ in 0..us * 180 {
        x = x * 1.0000001 + 0.5 / (x + 2.0);
    }
    black_box(x)
}

#[inline(never)]
fn culprit_heavy_item(mut x: f64, us: u64) -> f64 {
    for _ in 0..us * 180 {
        x = x * 1.0000001 + 0.5 / (x + 3.0);
    }
    black_box(x)
}

#[inline(never)]
fn even_work(mut x: f64, us: u64) -> f64 {
    for _ in 0..us * 180 {
        x = x * 1.0000001 + 0.5 / (x + 4.0);
    }
    black_box(x)
}

/// Rounds of rayon::join of two halves: unbalanced, one long (culprit_join_half) and one short.
fn join(unbalanced: bool) -> f64 {
    let mut total = 0.0;
    for round in 0..10 {
        let r = round as f64;
        let (a, b) = rayon::join(
            || {
                if unbalanced {
                    culprit_join_half(r, 33_000)
                } else {
                    even_work(r, 33_000)
                }
            },
            || even_work(r + 1.0, if unbalanced { 3_000 } else { 33_000 }),
        );
        total += a + b;
    }
    total
}

/// Rounds of rayon::scope with spawned tasks: unbalanced, one long spawn (culprit_long_spawn) and
/// four short ones; balanced, eight of the same length.
fn scope(unbalanced: bool) -> f64 {
    let mut total = 0.0;
    for round in 0..12 {
        let mut out = [0.0f64; 8];
        rayon::scope(|s| {
            for (k, slot) in out.iter_mut().enumerate() {
                let x = (round * 8 + k) as f64;
                s.spawn(move |_| {
                    *slot = match (unbalanced, k) {
                        (true, 0) => culprit_long_spawn(x, 30_000),
                        (true, 1..=4) => even_work(x, 1_000),
                        (true, _) => 0.0,
                        (false, _) => even_work(x, 7_000),
                    }
                });
            }
        });
        total += out.iter().sum::<f64>();
    }
    total
}

/// Rounds of a parallel iterator over 64 items: unbalanced, item 0 (culprit_heavy_item) costs
/// three quarters of the round; balanced, every item costs the same.
fn par_iter(unbalanced: bool) -> f64 {
    let mut total = 0.0;
    for round in 0..12 {
        total += (0..64u64)
            .into_par_iter()
            .map(|i| {
                let x = (round * 64 + i) as f64;
                match (unbalanced, i) {
                    (true, 0) => culprit_heavy_item(x, 30_000),
                    (true, _) => even_work(x, 150),
                    (false, _) => even_work(x, 850),
                }
            })
            .sum::<f64>();
    }
    total
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = || -> ! {
        eprintln!("usage: blame_rayon join|scope|par_iter balanced|unbalanced");
        std::process::exit(2)
    };
    let unbalanced = match args.get(2).map(String::as_str) {
        Some("balanced") => false,
        Some("unbalanced") => true,
        _ => usage(),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build_global()
        .unwrap();
    let total = match args.get(1).map(String::as_str) {
        Some("join") => join(unbalanced),
        Some("scope") => scope(unbalanced),
        Some("par_iter") => par_iter(unbalanced),
        _ => usage(),
    };
    println!("{total}");
}
