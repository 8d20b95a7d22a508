//! The threads a command asked for: the usual options of a thread or job count (`-j N`, `-jN`,
//! `--jobs N`, `--threads=N`, ...). The report compares it with the threads that worked: a
//! program asked for two threads that ran its work on one (ripgrep with `--sort path` searches
//! on one thread whatever `-j` says) has a parallel efficiency that reads well of one thread and
//! says nothing of the second it was given.

/// Options that give a count of threads or jobs, with and without `=`.
const LONG: &[&str] = &[
    "--jobs",
    "--threads",
    "--num-threads",
    "--nthreads",
    "--workers",
];
const SHORT: &[&str] = &["-j"];

/// The thread count the command asked for, and the option as written (`-j 2`). None: it asked
/// for none (or for one).
pub fn asked_threads(command: &[String]) -> Option<(u32, String)> {
    let args = command.get(1..)?;
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        let next = || args.get(i + 1).and_then(|n| n.parse::<u32>().ok());
        for &opt in LONG.iter().chain(SHORT) {
            let value = if a == opt {
                next().map(|n| (n, format!("{opt} {n}")))
            } else if let Some(v) = a.strip_prefix(opt).and_then(|r| r.strip_prefix('=')) {
                v.parse().ok().map(|n| (n, a.clone()))
            } else if SHORT.contains(&opt) {
                a.strip_prefix(opt)
                    .and_then(|v| v.parse().ok())
                    .map(|n| (n, a.clone()))
            } else {
                None
            };
            if value.is_some() {
                found = value; // the last one given wins, as in most option parsers
            }
        }
    }
    found.filter(|(n, _)| *n > 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_usual_count_options_are_read_in_each_spelling() {
        let asked = |w: &[&str]| asked_threads(&cmd(w)).map(|(n, _)| n);
        assert_eq!(asked(&["rg", "-j", "2", "--sort", "path", "x"]), Some(2));
        assert_eq!(asked(&["make", "-j4"]), Some(4));
        assert_eq!(asked(&["zstd", "--threads=3", "f"]), Some(3));
        assert_eq!(asked(&["x", "--jobs", "8", "--jobs", "2"]), Some(2));
        assert_eq!(
            asked_threads(&cmd(&["rg", "-j", "2"])).map(|(_, o)| o),
            Some("-j 2".to_string())
        );
    }

    #[test]
    fn no_count_one_thread_or_a_word_is_no_request() {
        let asked = |w: &[&str]| asked_threads(&cmd(w));
        assert_eq!(asked(&["rg", "-j1", "x"]), None);
        assert_eq!(asked(&["rg", "-jx"]), None);
        assert_eq!(asked(&["make", "-j"]), None);
        assert_eq!(asked(&["-j", "4"]), None); // argv[0] is the program, not an option
        assert_eq!(asked(&[]), None);
    }
}
