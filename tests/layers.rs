//! The layers of the Rust pipeline (docs/ARCHITECTURE.md, "Layers"), read from the source text of
//! src/ (no build of stallscope): each top-level module has a rank, and a module may refer only to
//! modules of its own rank or below. The model (`util`, `profile`, `symbols`, `analysis`,
//! `findings`, `model`) never refers to a view or a command; a view (`report`, `html`, `export`,
//! `diff`) never refers to another view; the commands sit on top. A reference is `crate::X` (in
//! a `use` line, a `use crate::{X, ...}` group or a path in code) or a chain of `super::` that
//! climbs out of the file's module to the crate root. Comments and string literals are left out. No file or
//! `#[cfg(test)]` module is exempt: test support that reads every view is `src/testing.rs`, a
//! module of its own at the top.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Each top-level module of src/ and its layer, bottom first.
const LAYERS: &[(&str, &[&str])] = &[
    ("util", &["util"]),
    ("profile", &["profile"]),
    ("symbols", &["symbols"]),
    ("analysis", &["analysis"]),
    ("findings", &["findings"]),
    ("model", &["model"]),
    ("view", &["report", "html", "export", "diff"]),
    (
        "command",
        &[
            "run", "attach", "bench", "demo", "scale", "cli", "options", "preload", "help",
        ],
    ),
    ("test support", &["testing"]),
];

/// The layers that make up the model: they never refer to a view or a command.
const MODEL_LAYERS: &[&str] = &[
    "util", "profile", "symbols", "analysis", "findings", "model",
];

fn rank_of(module: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, members))| members.contains(&module))
        .map(|(rank, (layer, _))| (rank, *layer))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under src/: `a.rs` and `a/mod.rs` are [a], `a/b.rs` is [a, b].
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text without comments and without the contents of string literals (raw ones too), each
/// character replaced by a space so that offsets and line numbers stay.
fn strip_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let ident = |k: usize| b[k].is_ascii_alphanumeric() || b[k] == b'_';
        // `r` begins a raw string unless it ends a name (`br` is a raw byte string).
        let raw_start = i == 0 || !ident(i - 1) || (b[i - 1] == b'b' && (i < 2 || !ident(i - 2)));
        if c == b'r' && raw_start && matches!(b.get(i + 1), Some(b'"' | b'#')) {
            // A raw string: r"...", r#"..."#, ...
            let hashes = b[i + 1..].iter().take_while(|&&h| h == b'#').count();
            if b.get(i + 1 + hashes) == Some(&b'"') {
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let body = i + 2 + hashes;
                let end = b[body..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .map_or(b.len(), |k| body + k + close.len());
                out.extend_from_slice(&b[i..body]);
                out.extend(b[body..end].iter().map(|&c| blank(c)));
                i = end;
                continue;
            }
        }
        if c == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A character literal such as '"'.
            out.extend_from_slice(&b[i..i + 3]);
            i += 3;
        } else if c == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // An escaped character literal: '\'', '\\', '\n'.
            let end = b[i + 2..]
                .iter()
                .position(|&c| c == b'\'')
                .map_or(b.len(), |k| i + 2 + k + 1);
            out.extend(b[i..end].iter().map(|&c| blank(c)));
            i = end;
        } else if c == b'"' {
            out.push(c);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                out.extend(b[i..(i + n).min(b.len())].iter().map(|&c| blank(c)));
                i += n;
            }
            if i < b.len() {
                out.push(b'"');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend_from_slice(b"  ");
            i += 2;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `text` (of a file whose module path is `path`) refers to: (byte offset,
/// module name).
fn references(text: &str, path: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let boundary = |at: usize| {
        at == 0 || {
            let c = text.as_bytes()[at - 1];
            !(c.is_ascii_alphanumeric() || c == b'_' || c == b':')
        }
    };
    for (at, _) in text.match_indices("crate::") {
        if !boundary(at) {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the names at the group's first level.
            let mut depth = 0;
            let mut expect_name = true;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => expect_name = true,
                    c if c.is_whitespace() => {}
                    _ if expect_name && depth == 0 => {
                        expect_name = false;
                        let name = ident_at(&group[k..]);
                        if !name.is_empty() {
                            out.push((at + "crate::{".len() + k, name.to_string()));
                        }
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push((at, name.to_string()));
            }
        }
    }
    // `super::super::X` climbing to the crate root: as many `super`s as the file's module is
    // deep (inline modules inside the file are not counted).
    if !path.is_empty() {
        let climb = "super::".repeat(path.len());
        for (at, _) in text.match_indices(&climb) {
            if !boundary(at) {
                continue;
            }
            let rest = &text[at + climb.len()..];
            if rest.starts_with("super::") {
                continue;
            }
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push((at, name.to_string()));
            }
        }
    }
    out
}

/// Every reference that breaks the layering, as `file:line: message`.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let top_level: BTreeMap<String, ()> = files
        .iter()
        .filter_map(|f| module_path(f.strip_prefix(src).unwrap()).first().cloned())
        .map(|m| (m, ()))
        .collect();
    let mut out = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(src).unwrap();
        let path = module_path(rel);
        let Some(module) = path.first() else {
            continue;
        };
        // The crate roots: lib.rs declares the modules, main.rs calls cli.
        if module == "lib" || module == "main" {
            continue;
        }
        let Some((rank, layer)) = rank_of(module) else {
            out.push(format!(
                "src/{}: module `{module}` has no layer: add it to LAYERS in tests/layers.rs",
                rel.display()
            ));
            continue;
        };
        let text = strip_comments(&std::fs::read_to_string(file).unwrap());
        for (at, target) in references(&text, &path) {
            if target == *module || !top_level.contains_key(&target) {
                continue;
            }
            let line = text[..at].matches('\n').count() + 1;
            let here = format!("src/{}:{line}", rel.display());
            let Some((target_rank, target_layer)) = rank_of(&target) else {
                out.push(format!(
                    "{here}: `{module}` refers to `{target}`, a module with no layer"
                ));
                continue;
            };
            if MODEL_LAYERS.contains(&layer) && !MODEL_LAYERS.contains(&target_layer) {
                out.push(format!(
                    "{here}: the model (`{module}`, layer {layer}) refers to `{target}`, a {target_layer}"
                ));
            } else if layer == "view" && target_layer == "view" {
                out.push(format!(
                    "{here}: the view `{module}` refers to another view, `{target}`"
                ));
            } else if target_rank > rank {
                out.push(format!(
                    "{here}: `{module}` (layer {layer}) refers to `{target}` of a higher layer ({target_layer})"
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_refers_only_to_its_layer_and_below() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "{} references break the layers (docs/ARCHITECTURE.md, \"Layers\"):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn every_top_level_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub mod ")
                .or(l.trim().strip_prefix("mod "))
        })
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert!(declared.len() >= 15, "{declared:?}");
    for m in declared {
        assert!(
            rank_of(m).is_some(),
            "module `{m}` has no layer in tests/layers.rs"
        );
    }
}

/// The checker itself, on text written to break each rule (so that the test above can fail).
#[test]
fn the_checker_finds_each_kind_of_break() {
    let dir = std::env::temp_dir().join(format!("stallscope-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("lib.rs", "pub mod analysis;\n");
    write(
        "analysis/mod.rs",
        "//! crate::report in a comment is no reference\nuse crate::profile::Profile;\nuse crate::findings::evaluate;\n",
    );
    write(
        "analysis/deep.rs",
        "fn f() { super::super::html::render(); }\n",
    );
    write(
        "html/mod.rs",
        "use crate::{util::escape,\n    report::json};\nlet s = \"crate::export in a string\";\n",
    );
    write("report/mod.rs", "use crate::model::Model;\n");
    write("export/mod.rs", "");
    write("profile/mod.rs", "use crate::util::ratio;\n");
    write("findings/mod.rs", "");
    write("model/mod.rs", "");
    write("util.rs", "use crate::run::main;\n");
    write("run.rs", "use crate::html::render;\n");
    write("newthing.rs", "");
    let found = violations(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let has = |file: &str, what: &str| {
        assert!(
            found
                .iter()
                .any(|f| f.starts_with(file) && f.contains(what)),
            "no {what:?} at {file} in {found:#?}"
        );
    };
    has("src/analysis/mod.rs:3", "higher layer (findings)");
    has("src/analysis/deep.rs:1", "the model (`analysis`");
    has("src/html/mod.rs:2", "another view, `report`");
    has("src/util.rs:1", "`run`, a command");
    has("src/newthing.rs", "has no layer");
    assert_eq!(found.len(), 5, "{found:#?}");
}

/// The most lines a Rust file under src/ may have before its tests (docs/ARCHITECTURE.md,
/// "Layers"): a file that grows past it holds more than one job and is split by job.
const MAX_LINES_BEFORE_TESTS: usize = 1000;

/// The lines of `text` before its first `#[cfg(test)]` (all of them where it has none).
fn lines_before_tests(text: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with("#[cfg(test)]"))
        .unwrap_or_else(|| text.lines().count())
}

#[test]
fn no_source_file_has_more_than_a_thousand_lines_before_its_tests() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "{files:?}");
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let n = lines_before_tests(&std::fs::read_to_string(path).unwrap());
            (n > MAX_LINES_BEFORE_TESTS).then(|| format!("{}: {n} lines", path.display()))
        })
        .collect();
    long.sort();
    assert!(
        long.is_empty(),
        "split these by job (at most {MAX_LINES_BEFORE_TESTS} lines before the tests): {long:?}"
    );
}

#[test]
fn the_line_count_stops_at_the_first_tests() {
    let body = "fn f() {}\n".repeat(1200);
    assert_eq!(lines_before_tests(&body), 1200);
    let with_tests = format!("{}#[cfg(test)]\nmod tests {{}}\n{body}", "// a\n".repeat(7));
    assert_eq!(lines_before_tests(&with_tests), 7);
    let indented = format!("{}    #[cfg(test)]\n", "x\n".repeat(3));
    assert_eq!(lines_before_tests(&indented), 3);
}
