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
    "--parallel",
];
/// Short options of a count: `-j` (make, ninja, rg), `-T` (the compressors' threads: `-T2`).
const SHORT: &[&str] = &["-j", "-T"];

/// Where a word of a command gives a count: `--jobs 8` (the number is the next word),
/// `--jobs=8`, or `-j8` and `-T2` (the number ends the option's word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountWord {
    /// The index of the word that holds the number.
    pub index: usize,
    /// That word's text before the number (`--jobs=`, `-j`; empty for a word of its own).
    pub prefix: String,
    pub value: u32,
    /// The option as written (`-j 2`, `--threads=3`).
    pub written: String,
}

/// Every place in `command`'s arguments (after the program) where an option that `is_count`
/// names (`-j`, `--jobs`) is given a number, in order: `--jobs 8`, `--jobs=8`, and for a
/// short option also `-j8`. One scanner for the report (how many threads the command asked for) and the
/// remedies (where bench puts its count).
pub fn count_words(command: &[String], is_count: impl Fn(&str) -> bool) -> Vec<CountWord> {
    let number = |w: &str| {
        (!w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()))
            .then(|| w.parse::<u32>().ok())
            .flatten()
    };
    let mut out = Vec::new();
    for (i, a) in command.iter().enumerate().skip(1) {
        let found = if let Some((name, value)) = a.split_once('=') {
            number(value)
                .filter(|_| is_count(name))
                .map(|n| (i, format!("{name}="), n, a.clone()))
        } else if let Some((name, n)) = attached_short(a)
            .and_then(|(name, rest)| Some((name, number(rest)?)))
            .filter(|(name, _)| is_count(name))
        {
            Some((i, name.to_string(), n, a.clone()))
        } else if is_count(a) {
            command
                .get(i + 1)
                .and_then(|v| number(v))
                .map(|n| (i + 1, String::new(), n, format!("{a} {n}")))
        } else {
            None
        };
        if let Some((index, prefix, value, written)) = found {
            out.push(CountWord {
                index,
                prefix,
                value,
                written,
            });
        }
    }
    out
}

/// A short option with its value attached (`-j8`, `-T2`): the option (`-j`) and the rest.
fn attached_short(word: &str) -> Option<(&str, &str)> {
    let rest = word.strip_prefix('-')?;
    let first = rest.chars().next().filter(|c| c.is_ascii_alphabetic())?;
    let len = 1 + first.len_utf8();
    (word.len() > len).then(|| word.split_at(len))
}

/// The thread count the command asked for, and the option as written (`-j 2`). None: it asked
/// for none (or for one).
pub fn asked_threads(command: &[String]) -> Option<(u32, String)> {
    let is_count = |w: &str| LONG.contains(&w) || SHORT.contains(&w);
    // The last one given wins, as in most option parsers.
    count_words(command, is_count)
        .pop()
        .map(|c| (c.value, c.written))
        .filter(|(n, _)| *n > 1)
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
        // The compressors' `-T` and sort's `--parallel`: xz -T2 on a file of one block ran one
        // worker, and the report said only "1 of the program's 2 threads worked".
        assert_eq!(asked(&["xz", "-T2", "-k", "-c", "f"]), Some(2));
        assert_eq!(asked(&["zstd", "-T", "4", "f"]), Some(4));
        assert_eq!(asked(&["sort", "--parallel=2", "-S", "100M", "f"]), Some(2));
        assert_eq!(asked(&["xz", "-T0", "f"]), None); // 0: as many as the CPUs
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
        // A short option that is no count, with a number attached, and sort's -T DIR.
        assert_eq!(asked(&["head", "-n5", "f"]), None);
        assert_eq!(asked(&["sort", "-T", "/tmp", "f"]), None);
        assert_eq!(asked(&["-j", "4"]), None); // argv[0] is the program, not an option
        assert_eq!(asked(&[]), None);
    }
}
