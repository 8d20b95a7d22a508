//! The documents and the sources' comments describe stallscope as it is, not the history of its
//! work: no "nineteenth stop", "issue 27's ... round" or "since issue 27" (git keeps the history),
//! and a reference into docs/PERFORMANCE.md names one of its sections.
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

/// The phrase named in a failure, for each kind of match.
const WHAT: &[(&str, &str)] = &[
    ("ordinal", "a numbered stop (\"the Nth stop\")"),
    (
        "pointer",
        "a stop pointed at (\"this stop\", \"the last stop\")",
    ),
    ("possessive", "an issue's round of work (\"issue N's ...\")"),
    ("dated", "a behaviour dated by an issue (\"since issue N\")"),
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
