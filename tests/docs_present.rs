//! The documents and the sources' comments describe stallscope as it is, not the history of its
//! work: no "nineteenth stop", "issue 27's ... round" or "since issue 27", no work item of this
//! project cited ("(issue 12 item 9)", "Issue 22, item 4:", "issues 12 and 25": git keeps the
//! history), and a reference into docs/PERFORMANCE.md names one of its sections. Another
//! project's tracker is cited by its name ("redis issue 1234", "upstream issue 5"), a "#1234" or
//! a URL, and stays.
//!
//! Read: docs/*.md, README.md, and every source and script under src/, preload/, tests/, benches/
//! and include/ (their whole text: comments, docstrings and strings alike).

use std::path::{Path, PathBuf};

/// Ordinal words that, followed by "stop", number a round of work.
const ORDINALS: &[&str] = &[
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// Words that, followed by "stop", point at a round of work ("this stop", "the last stop").
/// Not "next": "the next stop of a traced thread" is ptrace's.
const STOP_POINTERS: &[&str] = &["this", "last", "previous"];

/// Words that, followed by "issue N", date a behaviour by the work that changed it.
const ISSUE_DATERS: &[&str] = &["since", "before", "until"];

/// Words that, right before "issue N", make it this project's work item ("the programs of issue
/// 14"); any other word before it names whose tracker it is ("redis issue 1234", "Google Benchmark
/// issue 537").
const NOT_A_TRACKER: &[&str] = &[
    "a", "also", "an", "and", "are", "as", "at", "by", "cf", "each", "for", "from", "in", "is",
    "its", "of", "on", "or", "our", "per", "see", "that", "the", "this", "to", "under", "was",
    "which", "with",
];

/// The phrase named in a failure, for each kind of match.
const WHAT: &[(&str, &str)] = &[
    ("ordinal", "a numbered stop (\"the Nth stop\")"),
    (
        "pointer",
        "a stop pointed at (\"this stop\", \"the last stop\")",
    ),
    ("possessive", "an issue's round of work (\"issue N's ...\")"),
    ("dated", "a behaviour dated by an issue (\"since issue N\")"),
    (
        "work item",
        "a work item of this project (\"(issue N\", \"Issue N, item M\"; another project's is \
         cited as \"redis issue N\", \"#N\" or a URL)",
    ),
    ("section", "a section docs/PERFORMANCE.md does not have"),
];

const SOURCE_EXTENSIONS: &[&str] = &["rs", "c", "h", "cc", "cpp", "sh", "py", "md", "txt"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with('.') || name == "target" || name == "golden" {
            continue;
        }
        if path.is_dir() {
            collect(&path, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e))
        {
            out.push(path);
        }
    }
}

/// The files read: the documents, then the sources.
fn files() -> Vec<PathBuf> {
    let root = root();
    let mut out = vec![root.join("README.md"), root.join("build.rs")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    for dir in ["src", "preload", "tests", "benches", "include"] {
        collect(&root.join(dir), &mut out);
    }
    let me = root.join("tests").join("docs_present.rs");
    out.retain(|p| *p != me);
    out.sort();
    out
}

/// The text's words (letters, digits and apostrophes, lower case) with the line each is on.
fn words(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut line = 1;
    let mut start = 1;
    for c in text.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '\u{2019}' {
            if word.is_empty() {
                start = line;
            }
            word.push(if c == '\u{2019}' { '\'' } else { c });
        } else if !word.is_empty() {
            out.push((word.trim_matches('\'').to_lowercase(), start));
            word.clear();
        }
        if c == '\n' {
            line += 1;
        }
    }
    if !word.is_empty() {
        out.push((word.trim_matches('\'').to_lowercase(), start));
    }
    out
}

fn is_numbered(word: &str) -> bool {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && ["st", "nd", "rd", "th"].contains(&suffix)
}

fn is_issue_number(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_digit())
}

/// The words of the text as (start, end) byte offsets, the characters `words` keeps.
fn spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        let in_word = c.is_alphanumeric() || c == '\'' || c == '\u{2019}';
        match (in_word, start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                out.push((s, at));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// What lies between two words: nothing but spaces (on one line, or across the lines of one
/// comment or paragraph), or a break: punctuation ("(", ",", "." and also the "#" of "#1234" or the
/// "/" of "issues/1234"), or a blank line (a new paragraph, heading or comment).
#[derive(PartialEq)]
enum Gap {
    Spaces,
    Break,
}

fn gap(between: &str) -> Gap {
    let lines: Vec<&str> = between.split('\n').collect();
    if !lines[0].trim().is_empty() {
        return Gap::Break;
    }
    let next = &lines[1..];
    for (k, line) in next.iter().enumerate() {
        // A comment's next line begins with its leader (`//!`, `///`, ` * `, `#`); a line with
        // nothing else, before the next word's line, is a blank line.
        let rest = line
            .trim_start()
            .trim_start_matches(['/', '*', '!', '#'])
            .trim();
        if !rest.is_empty() || k + 1 < next.len() {
            return Gap::Break;
        }
    }
    Gap::Spaces
}

/// (line, the words matched) of every work item of this project cited in the text: "issue N" or
/// "issues N" whose number follows after spaces only, after a break or a word that names no
/// tracker ("(issue 12 item 9", "Issue 22, item 4", "of issue 14", "issues 12 and 25"). Not
/// "issue #N", a URL's "issues/N", another project's "redis issue N", nor "since issue N"
/// (`chronicle_phrases` names that one).
fn work_items(text: &str) -> Vec<(usize, String)> {
    let spans = spans(text);
    let word = |i: usize| {
        let (s, e) = spans[i];
        text[s..e].trim_matches(['\'', '\u{2019}']).to_lowercase()
    };
    let mut found = Vec::new();
    for i in 0..spans.len().saturating_sub(1) {
        let issue = word(i);
        if issue != "issue" && issue != "issues" {
            continue;
        }
        let number = word(i + 1);
        if !is_issue_number(&number) || gap(&text[spans[i].1..spans[i + 1].0]) != Gap::Spaces {
            continue;
        }
        let ours = i == 0 || gap(&text[spans[i - 1].1..spans[i].0]) == Gap::Break || {
            let before = word(i - 1);
            NOT_A_TRACKER.contains(&before.as_str())
        };
        let dated = i > 0 && ISSUE_DATERS.contains(&word(i - 1).as_str());
        if ours && !dated {
            let line = text[..spans[i].0].matches('\n').count() + 1;
            found.push((line, format!("{issue} {number}")));
        }
    }
    found
}

/// (line, kind, the words matched) of every chronicle phrase in the text.
fn chronicle_phrases(text: &str) -> Vec<(usize, &'static str, String)> {
    let words = words(text);
    let mut found = Vec::new();
    for (i, (word, line)) in words.iter().enumerate() {
        let next = words.get(i + 1).map(|(w, _)| w.as_str()).unwrap_or("");
        let after = words.get(i + 2).map(|(w, _)| w.as_str()).unwrap_or("");
        let is_stop = |w: &str| w == "stop" || w == "stop's";
        if is_stop(next) && (ORDINALS.contains(&word.as_str()) || is_numbered(word)) {
            found.push((*line, "ordinal", format!("{word} {next}")));
        }
        if is_stop(next) && STOP_POINTERS.contains(&word.as_str()) {
            found.push((*line, "pointer", format!("{word} {next}")));
        }
        if word == "issue"
            && let Some(number) = next.strip_suffix("'s")
            && is_issue_number(number)
        {
            found.push((*line, "possessive", format!("{word} {next}")));
        }
        if ISSUE_DATERS.contains(&word.as_str()) && next == "issue" && is_issue_number(after) {
            found.push((*line, "dated", format!("{word} {next} {after}")));
        }
    }
    found
}

/// The titles of docs/PERFORMANCE.md's headings.
fn performance_sections() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("docs/PERFORMANCE.md")).unwrap();
    text.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_string())
        .collect()
}

/// (line, the title quoted) of every `PERFORMANCE.md, "Title"` that names no section; a title cut
/// by the end of its line matches the sections it begins.
fn missing_sections(text: &str, sections: &[String]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("PERFORMANCE.md") {
            rest = &rest[at + "PERFORMANCE.md".len()..];
            let quoted = rest
                .trim_start_matches(',')
                .trim_start()
                .strip_prefix('"')
                .map(|q| q.split('"').next().unwrap_or(""));
            if let Some(title) = quoted {
                let title = title.trim();
                if !title.is_empty() && !sections.iter().any(|s| s.starts_with(title)) {
                    found.push((n + 1, title.to_string()));
                }
            }
        }
    }
    found
}

fn what(kind: &str) -> &'static str {
    WHAT.iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, w)| *w)
        .unwrap()
}

#[test]
fn docs_and_comments_hold_no_chronicle() {
    let root = root();
    let sections = performance_sections();
    let mut problems = Vec::new();
    let all = files();
    assert!(all.len() > 100, "too few files read: {}", all.len());
    for path in &all {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        for (line, kind, words) in chronicle_phrases(&text) {
            problems.push(format!("{name}:{line}: \"{words}\": {}", what(kind)));
        }
        for (line, words) in work_items(&text) {
            problems.push(format!("{name}:{line}: \"{words}\": {}", what("work item")));
        }
        for (line, title) in missing_sections(&text, &sections) {
            problems.push(format!(
                "{name}:{line}: PERFORMANCE.md, \"{title}\": {}",
                what("section")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "say what is true now and why, not which round of work changed it (history stays in git):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_phrases_are_found() {
    let text = concat!(
        "a\n// as issue 27's nineteenth\n// stop measured, since issue 12 and at this stop;\n",
        "the 3rd stop; Issue 24's goal; the next stop of a thread; the stop flag; this stops it",
    );
    let found: Vec<(usize, &str)> = chronicle_phrases(text)
        .iter()
        .map(|(l, k, _)| (*l, *k))
        .collect();
    assert_eq!(
        found,
        vec![
            (2, "possessive"),
            (2, "ordinal"),
            (3, "dated"),
            (3, "pointer"),
            (4, "ordinal"),
            (4, "possessive"),
        ]
    );
    let sections = vec![
        "Fork children".to_string(),
        "Faithfulness: the sampler".to_string(),
    ];
    let refs = concat!(
        "(docs/PERFORMANCE.md, \"Fork children\"), PERFORMANCE.md \"Faithfulness\n",
        "PERFORMANCE.md, \"Issue 27's sixth stop\"; docs/PERFORMANCE.md measures both",
    );
    assert_eq!(
        missing_sections(refs, &sections),
        vec![(2, "Issue 27's sixth stop".to_string())]
    );
}

#[test]
fn work_items_are_found_and_other_trackers_kept() {
    let text = concat!(
        "//! Runs (issue 12 item 9): the tree.\n",
        "//! Issue 22, item 4: each cause\n",
        "/* as issue 25: an emptied environment; issues 12 and 25 */\n",
        "# Cause programs (Issue 14)\n",
        "the programs of issue 14 and the tree of\n",
        "//! issue 54 item 2\n",
        "\n",
        "Issue 52 (how a program uses its threads)\n",
        "since issue 12, and before issue 3\n",
        "redis issue 1234: a crash; the upstream issue 5, item 2; glibc bug 12345\n",
        "Google Benchmark issue 537 asked; Criterion\n",
        "//! issue 822 and chrono issue #677, https://github.com/a/b/issues/99 (issue #12)\n",
        "issue 27's round; an issue with 3 threads; the issue, 12 of them",
    );
    let found: Vec<(usize, String)> = work_items(text);
    let want: Vec<(usize, String)> = [
        (1, "issue 12"),
        (2, "issue 22"),
        (3, "issue 25"),
        (3, "issues 12"),
        (4, "issue 14"),
        (5, "issue 14"),
        (6, "issue 54"),
        (8, "issue 52"),
    ]
    .iter()
    .map(|(l, w)| (*l, w.to_string()))
    .collect();
    assert_eq!(found, want);
    // "since issue 12" is a dated behaviour, named once, by `chronicle_phrases`.
    let dated: Vec<usize> = chronicle_phrases(text)
        .iter()
        .filter(|(_, k, _)| *k == "dated")
        .map(|(l, _, _)| *l)
        .collect();
    assert_eq!(dated, vec![9, 9]);
}
