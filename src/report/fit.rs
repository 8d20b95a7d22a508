//! The terminal report fits its width (the terminal's, `COLUMNS`, else 80): prose lines are wrapped
//! under their own hanging indent (a finding's `- ` evidence, its `cause:`/`remedy:` text, a
//! severity's title), words longer than a line (paths) are cut in the middle. Tables and the
//! timeline are laid out to fit where they are made (`states_text`); a row of one (columns apart
//! by two spaces or more, or `|`) is left as it is here.

use std::io::IsTerminal;

/// The width the report's tables and timeline are laid out for: the terminal's when standard
/// output is one, else `COLUMNS` when set, else 80.
pub fn width() -> usize {
    wrap_width().unwrap_or(80)
}

/// The width prose is wrapped to: only for a terminal, or when `COLUMNS` asks for it. Piped
/// output keeps each sentence on one line, so that `grep` finds it whole.
pub fn wrap_width() -> Option<usize> {
    if std::io::stdout().is_terminal() {
        // SAFETY: TIOCGWINSZ writes a winsize into the struct we own; no other precondition.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        if unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0
            && ws.ws_col >= 40
        {
            return Some(usize::from(ws.ws_col));
        }
        return Some(80);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .filter(|&c| c >= 40)
}

/// Characters a terminal shows: escape sequences (the report's styles) take none.
fn visible_len(s: &str) -> usize {
    strip_escapes(s).chars().count()
}

/// The part of a line its continuation lines are indented under: the leading spaces, then a
/// bullet (`- `), a severity (`HIGH   `) or a label (`cause:  `).
fn hanging_prefix(line: &str) -> usize {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[indent..];
    let word_end = rest.find(' ').unwrap_or(rest.len());
    let word = &rest[..word_end];
    let spaces = rest[word_end..].len() - rest[word_end..].trim_start_matches(' ').len();
    let labelled = (word.len() >= 3 && word.chars().all(|c| c.is_ascii_uppercase()) && spaces >= 1)
        || (word.ends_with(':')
            && word.len() <= 10
            && word[..word.len() - 1]
                .chars()
                .all(|c| c.is_ascii_lowercase())
            && spaces >= 1);
    // An overview's label: `allocator   1,189 calls, ...` (a lowercase word, then spaces).
    let overview = word.len() <= 12
        && spaces >= 2
        && word.chars().all(|c| c.is_ascii_lowercase())
        && !rest[word_end + spaces..].contains("  ");
    if rest.starts_with("- ") {
        indent + 2
    } else if labelled || overview {
        indent + word_end + spaces
    } else {
        indent
    }
}

/// A row of a table or the timeline: columns two spaces apart after its prefix, or bars.
fn tabular(line: &str, prefix: usize) -> bool {
    let rest = line.get(prefix..).unwrap_or("");
    rest.contains("  ") || rest.contains('|')
}

/// A word longer than `room`, cut in the middle: `/usr/lib/x86_64…/libstdc++.so.6`.
fn cut_middle(word: &str, room: usize) -> String {
    let chars: Vec<char> = word.chars().collect();
    if chars.len() <= room || room < 5 {
        return word.to_string();
    }
    let head = (room - 1) / 2;
    let tail = room - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// `s` without its escape sequences.
fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One line wrapped to `width`: words (escape sequences take no room) laid out after the
/// line's own start, continuation lines under its hanging prefix.
fn wrap_line(line: &str, width: usize, out: &mut String) {
    let plain = strip_escapes(line);
    let hang = hanging_prefix(&plain);
    if plain.chars().count() <= width || tabular(&plain, hang) {
        out.push_str(line);
        out.push('\n');
        return;
    }
    let room = width.max(hang + 20);
    let indent = line.len() - line.trim_start_matches(' ').len();
    let mut current = line[..indent].to_string();
    let mut used = indent;
    let mut at_start = true; // nothing placed on this output line yet after its indent
    for token in line[indent..].split(' ') {
        let token = if visible_len(token) > room - hang {
            cut_middle(token, room - hang)
        } else {
            token.to_string()
        };
        let len = visible_len(&token);
        if !at_start && len > 0 && used + 1 + len > room {
            out.push_str(current.trim_end());
            out.push('\n');
            current = " ".repeat(hang);
            used = hang;
            at_start = true;
        }
        if at_start && token.is_empty() {
            continue; // the extra spaces of a line broken here
        }
        if !at_start {
            current.push(' ');
            used += 1;
        }
        current.push_str(&token);
        used += len;
        at_start = false;
    }
    out.push_str(current.trim_end());
    out.push('\n');
}

/// Every line of `text` wrapped to `width` (tables and styled lines as they are).
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        wrap_line(line.trim_end_matches('\n'), width, &mut out);
    }
    if !text.ends_with('\n') && out.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_under_its_hanging_indent_and_tables_stay() {
        let text = "  HIGH   Load imbalance in the parallel region in main at imbalanced_static.c:20: its 2 threads waited 41.2% of their time in it\n         - stake: 1.615 s of 3.925 s wall time (up to 1.70x faster, estimated) and a few more words to wrap it\n         cause:  The region's work is split unevenly among its threads, so the threads that finish early wait\n       tid  name                   life     CPU  allocator          lock wait        lock wait again and again\n";
        let out = fit(text, 80);
        for l in out.lines().filter(|l| !l.contains("tid  name")) {
            assert!(l.chars().count() <= 80, "{l}");
        }
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].starts_with("  HIGH   Load"), "{out}");
        assert!(
            lines[1].starts_with("         its") || lines[1].starts_with("         "),
            "{out}"
        );
        assert!(
            out.contains("\n           wall time") || out.contains("\n           "),
            "{out}"
        );
        assert!(
            out.contains("\n                 "),
            "cause's continuation: {out}"
        );
        assert!(out.contains("tid  name                   life"), "{out}");
        // Nothing lost: the same words in the same order.
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&out), words(text));
    }

    #[test]
    fn a_word_longer_than_a_line_is_cut_in_the_middle() {
        let path = format!("/usr/lib/{}/libstdc++.so.6", "x".repeat(120));
        let out = fit(&format!("  in {path} at last"), 80);
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
        assert!(out.contains('…') && out.contains("libstdc++.so.6"), "{out}");
    }
}
