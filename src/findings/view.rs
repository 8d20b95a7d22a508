//! What the detectors say about the analysis: user frames of sites as text, and the
//! `stallscope bench` commands that measure a remedy.

use crate::analysis::sites::{LockSiteSummary, SiteSummary};
use crate::symbols::Frame;

pub use crate::symbols::short_function;

/// What every detector calls a site whose user frame is unknown.
pub const UNKNOWN_FRAME: &str = "an unknown frame";

/// A frame as findings write it: `parse at p.cpp:12`, `parse (module)`, `module+0xoffset`.
pub fn frame_text(frame: &Frame) -> String {
    frame.short_text()
}

/// An allocation site's user frame as text.
pub fn site_user_text(site: &SiteSummary) -> Option<String> {
    site.user_frame().map(frame_text)
}

/// A lock site's user frame as text.
pub fn lock_site_user_text(site: &LockSiteSummary) -> Option<String> {
    site.user_frame().map(frame_text)
}

/// The longest command line a remedy quotes: longer ones (a compiler's, with its dozens of
/// options) read as `'PROGRAM ARGS'`, a line a user would type.
const MAX_QUOTED: usize = 100;

/// The profiled command's words: a process that rewrote its arguments into one title
/// ("redis-server 127.0.0.1:6379") reads as one word with spaces, and its words are the title's.
fn command_words(command: &[String]) -> Vec<String> {
    match command {
        [one] if one.contains(' ') => one.split_whitespace().map(str::to_string).collect(),
        _ => command.to_vec(),
    }
}

/// The profiled command as one shell word list, quoted for `stallscope bench`.
fn quoted_command(command: &[String]) -> String {
    let command = &command_words(command)[..];
    let line = command
        .iter()
        .map(|w| quote_word(w))
        .collect::<Vec<_>>()
        .join(" ");
    let quoted = quote_word(&line);
    if command.is_empty() || quoted.chars().count() > MAX_QUOTED {
        return "'PROGRAM ARGS'".to_string();
    }
    quoted
}

/// One shell word: as it is when no character of it means anything to the shell (options with
/// `=`, paths, addresses), else in single quotes.
fn quote_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-.,:/@+=%^".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// How a remedy's effect is measured on a server (a process whose threads mostly waited for
/// clients): windows of it under the same load, since a server has no end to time.
const SERVER_MEASURE: &str = "`stallscope attach --duration 10 PID` while a load generator runs, before and after the change";

/// The command that benchmarks the profiled program under other allocators.
pub fn bench_allocators(command: &[String], server: bool) -> String {
    if server {
        return SERVER_MEASURE.to_string();
    }
    format!(
        "`stallscope bench --allocators glibc,jemalloc,mimalloc {}`",
        quoted_command(command)
    )
}

/// The options that set a thread or job count by convention (`-j4`, `--jobs=4`, `--threads 4`,
/// `--io-threads 4`, the compressors' `-T2`, sort's `--parallel=2`): bench puts its count where
/// their number is.
fn count_option(word: &str) -> bool {
    let name = word.trim_start_matches('-');
    let short = !word.starts_with("--");
    word.starts_with('-')
        && ((short && (name == "j" || name == "T"))
            || name == "jobs"
            || name.ends_with("threads")
            || name == "workers"
            || name == "parallel")
}

/// Stands for bench's `{threads}` while the command is quoted (braces would be quoted apart).
const COUNT: &str = "STALLSCOPECOUNT";

/// `command` with the number of its thread or job count option replaced by [`COUNT`], or None
/// when no option sets one.
fn with_count_placeholder(command: &[String]) -> Option<Vec<String>> {
    let first = crate::analysis::asked_threads::count_words(command, count_option)
        .into_iter()
        .next()?;
    let mut out = command.to_vec();
    out[first.index] = format!("{}{COUNT}", first.prefix);
    Some(out)
}

/// Where the command has no thread or job count option: the user places bench's count.
const PLACE_THE_COUNT: &str =
    " (put {threads} where the program takes its thread count, or have it read STALLSCOPE_THREADS)";

/// The command that benchmarks the profiled program at several thread counts. Bench runs the
/// command with `{threads}` replaced by each count and `STALLSCOPE_THREADS` set to it, so where
/// an option of the command sets its thread or job count (a build's `-j`), bench's count goes
/// there; where none does, running the command as it is would time the same program three
/// times, so `{threads}` stands where a count option would be and the words say to place it.
pub fn bench_threads(command: &[String], server: bool) -> String {
    if server {
        return SERVER_MEASURE.to_string();
    }
    let words = command_words(command);
    let (words, placed) = match with_count_placeholder(&words) {
        Some(w) => (w, true),
        None => {
            let mut w = words;
            w.extend(["--threads".to_string(), COUNT.to_string()]);
            (w, false)
        }
    };
    let quoted = quoted_command(&words);
    // A command quoted in full with its own count option is ready to run; anything else (no
    // such option, or a command too long to quote) needs the user's word on where the count goes.
    let note = if placed && quoted.contains(COUNT) {
        ""
    } else {
        PLACE_THE_COUNT
    };
    format!(
        "`stallscope bench --threads 1,2,4 {}`{note}",
        quoted.replace(COUNT, "{threads}")
    )
}

/// The evidence line naming the locks that lock-wait samples caught by their lock word (name,
/// samples), most first, out of `samples` lock-wait samples; None when none was caught.
pub fn caught_locks_evidence<'a>(
    locks: impl IntoIterator<Item = (&'a str, u64)>,
    samples: u64,
) -> Option<String> {
    let locks: Vec<(&str, u64)> = locks.into_iter().collect();
    let caught: u64 = locks.iter().map(|l| l.1).sum();
    (caught > 0).then(|| {
        let list: Vec<String> = locks
            .iter()
            .take(3)
            .map(|(name, n)| format!("{name} ({} samples)", crate::util::fmt_count(*n)))
            .collect();
        format!(
            "the lock waited on, by the lock word the samples caught ({} of {} samples): {}",
            crate::util::fmt_count(caught),
            crate::util::fmt_count(samples),
            list.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: Option<&str>, file: Option<&str>, line: Option<u32>, module: &str) -> Frame {
        Frame {
            function: function.map(str::to_string),
            file: file.map(str::to_string),
            line,
            module: module.into(),
            offset: 0,
            inlined: false,
        }
    }

    #[test]
    fn short_function_strips_templates_parameters_and_return_type() {
        assert_eq!(
            short_function(
                "std::basic_istream<char, std::char_traits<char> >& std::operator>><char, std::char_traits<char>, std::allocator<char> >(std::basic_istream<char, std::char_traits<char> >&, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&)"
            ),
            "std::operator>>"
        );
        assert_eq!(
            short_function(
                "void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char const*>(char const*, char const*, std::forward_iterator_tag)"
            ),
            "std::__cxx11::basic_string::_M_construct"
        );
        assert_eq!(
            short_function("operator new(unsigned long)"),
            "operator new"
        );
        assert_eq!(short_function("parse_records(int)"), "parse_records");
        assert_eq!(short_function("worker"), "worker");
        assert_eq!(
            short_function("std::ostream::operator<<(int)"),
            "std::ostream::operator<<"
        );
    }

    #[test]
    fn user_frame_reads_the_sites_user_frame() {
        let site = SiteSummary {
            frames: vec![
                frame(
                    Some("operator new(unsigned long)"),
                    None,
                    None,
                    "/usr/lib/libstdc++.so.6",
                ),
                frame(Some("parse(int)"), Some("/src/p.cpp"), Some(12), ""),
            ],
            user: 1,
            ..SiteSummary::default()
        };
        assert_eq!(site_user_text(&site).as_deref(), Some("parse at p.cpp:12"));
        let unknown = SiteSummary {
            user: 5,
            ..SiteSummary::default()
        };
        assert_eq!(site_user_text(&unknown), None);
    }

    #[test]
    fn a_frame_without_a_function_is_named_by_module_and_offset() {
        // A stripped program: the same name the rest of the report gives it, never `??`.
        let mut f = frame(None, None, None, "/usr/bin/sort");
        f.offset = 0xb25c;
        let site = SiteSummary {
            frames: vec![f],
            user: 0,
            ..SiteSummary::default()
        };
        assert_eq!(site_user_text(&site).as_deref(), Some("sort+0xb25c"));
    }

    #[test]
    fn bench_commands_quote_the_profiled_command() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            bench_allocators(&words(&["./prog", "a b"]), false),
            r#"`stallscope bench --allocators glibc,jemalloc,mimalloc './prog '\''a b'\'''`"#
        );
        // A command with no count option would run the same program at every count: `{threads}`
        // stands where a count option would be, and the words say to place it.
        assert_eq!(
            bench_threads(&words(&["./prog"]), false),
            "`stallscope bench --threads 1,2,4 './prog --threads {threads}'` (put {threads} where the program takes its thread count, or have it read STALLSCOPE_THREADS)"
        );
        assert_eq!(
            bench_threads(&words(&["/usr/bin/python3.11", "gil.py"]), false),
            "`stallscope bench --threads 1,2,4 '/usr/bin/python3.11 gil.py --threads {threads}'` (put {threads} where the program takes its thread count, or have it read STALLSCOPE_THREADS)"
        );
        // A compiler's command line is no line to type: a placeholder stands for it.
        let long: Vec<String> = (0..40).map(|i| format!("--option-{i}")).collect();
        assert_eq!(
            bench_threads(&long, false),
            "`stallscope bench --threads 1,2,4 'PROGRAM ARGS'` (put {threads} where the program takes its thread count, or have it read STALLSCOPE_THREADS)"
        );
        // A build's job count and a thread count option are where bench puts its count.
        assert_eq!(
            bench_threads(&words(&["make", "-j2", "-s"]), false),
            "`stallscope bench --threads 1,2,4 'make -j{threads} -s'`"
        );
        assert_eq!(
            bench_threads(&words(&["./pool", "--threads", "8", "in"]), false),
            "`stallscope bench --threads 1,2,4 './pool --threads {threads} in'`"
        );
        assert_eq!(
            bench_threads(&words(&["cargo", "build", "--jobs=4"]), false),
            "`stallscope bench --threads 1,2,4 'cargo build --jobs={threads}'`"
        );
        // The compressors' -T and sort's --parallel (xz -T2's remedy had benchmarked 'xz -T2'
        // at every count); sort's -T DIR is no count.
        assert_eq!(
            bench_threads(&words(&["xz", "-T2", "-k", "-c", "f"]), false),
            "`stallscope bench --threads 1,2,4 'xz -T{threads} -k -c f'`"
        );
        assert_eq!(
            bench_threads(&words(&["sort", "--parallel=2", "-T", "/tmp", "f"]), false),
            "`stallscope bench --threads 1,2,4 'sort --parallel={threads} -T /tmp f'`"
        );
        // A title the process set is its words, quoted once, its count option found among them.
        assert_eq!(
            bench_threads(&words(&["redis-server 127.0.0.1:6379"]), false),
            "`stallscope bench --threads 1,2,4 'redis-server 127.0.0.1:6379 --threads {threads}'` (put {threads} where the program takes its thread count, or have it read STALLSCOPE_THREADS)"
        );
        assert_eq!(
            bench_threads(&words(&["srv --io-threads 4 :6379"]), false),
            "`stallscope bench --threads 1,2,4 'srv --io-threads {threads} :6379'`"
        );
        // A server is measured in windows under load, not from start to end.
        assert!(bench_threads(&words(&["redis-server"]), true).starts_with("`stallscope attach"));
    }
}
