//! The layers of the interposer (docs/ARCHITECTURE.md, "The interposer's layers"), read from the
//! source text of preload/ (no build): each file has a layer, and a file may refer only to the
//! symbols of files of its own layer or below. A symbol is one of the interposer's own (`ss_`
//! names) defined with external linkage in a .c file: a function with a body or a variable not
//! declared `extern`. A reference is any other mention of that name in another file (a call, a
//! use, a declaration of its own), and, in a header, a mention inside an inline function's body or
//! a macro's definition (a header's prototypes and `extern` lines only declare). A header may be
//! included only by files of its layer or above. Comments, strings and character constants are
//! left out. No file is exempt.

use std::collections::BTreeMap;
use std::path::Path;

/// Each layer of preload/ and its files, bottom first.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "ground",
        &[
            "base.c",
            "environ.c",
            "ss_internal.h",
            "ss_raw.h",
            "ss_format.h",
            "ss_options.def",
        ],
    ),
    (
        "services",
        &[
            "writer.c",
            "title.c",
            "stacks.c",
            "unwind.c",
            "symbols.c",
            "python.c",
            "got.c",
            "single.c",
            "glibc_check.c",
            "lock_steps.c",
            "lock_steps.h",
        ],
    ),
    (
        "hooks",
        &[
            "ss_hooks.h",
            "alloc.c",
            "locks.c",
            "futex.c",
            "omp.c",
            "ompt.c",
            "itt.c",
            "waitfor.c",
            "phases.c",
            "sampler.c",
            "threads.c",
            "creds.c",
        ],
    ),
    ("lifecycle", &["lifecycle.c"]),
    ("attach and sandbox", &["attach.c", "sandbox.c"]),
];

fn layer_of(file: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, files))| files.contains(&file))
        .map(|(rank, (layer, _))| (rank, *layer))
}

/// The text without comments, string literals and character constants, each character replaced
/// by a space so that offsets and line numbers stay.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
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
        } else if c == b'"' || c == b'\'' {
            out.push(c);
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                out.extend(b[i..(i + n).min(b.len())].iter().map(|&c| blank(c)));
                i += n;
            }
            if i < b.len() {
                out.push(b[i]);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every identifier of `text` with its byte offset.
fn identifiers(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1])) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            if !b[start].is_ascii_digit() {
                out.push((start, &text[start..i]));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// What one file holds: the external symbols it defines, the places it mentions an `ss_` name
/// (offset, name), and the headers it includes.
struct Parsed {
    defines: Vec<String>,
    mentions: Vec<(usize, String)>,
    includes: Vec<String>,
}

/// The spans of the preprocessor's lines, each with its continuations.
fn directives(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0;
    let mut in_directive: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = line.trim_end_matches('\n');
        if in_directive.is_none() && body.trim_start().starts_with('#') {
            in_directive = Some(start);
        }
        if let Some(from) = in_directive
            && !body.ends_with('\\')
        {
            spans.push((from, at));
            in_directive = None;
        }
    }
    spans
}

/// The raw text's `#include "..."` names (the stripped text has lost the quoted name).
fn quoted_includes(raw: &str) -> Vec<String> {
    raw.lines()
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .filter_map(|l| l.trim_start().strip_prefix("include"))
        .filter_map(|l| l.trim().strip_prefix('"'))
        .filter_map(|l| l.split('"').next())
        .map(str::to_string)
        .collect()
}

const NOT_A_NAME: &[&str] = &[
    "__attribute__",
    "__attribute",
    "__asm__",
    "asm",
    "sizeof",
    "_Alignas",
    "__typeof__",
    "typeof",
    "_Static_assert",
];

fn parse(raw: &str, header: bool) -> Parsed {
    let text = strip(raw);
    let directive_spans = directives(&text);
    let in_directive = |at: usize| directive_spans.iter().any(|&(a, b)| at >= a && at < b);
    // The top level, outside directives: each declaration or definition as (start, end, body
    // start): the text before its `;` or its body's `{`.
    let b = text.as_bytes();
    let mut defines = Vec::new();
    let mut mentions = Vec::new();
    // Spans of the text that count as references in a header: function bodies.
    let mut bodies: Vec<(usize, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut stmt_start = 0usize;
    let mut i = 0;
    // A statement's head (text before its first top-level `{`), and whether it has `=`.
    let mut head_end: Option<usize> = None;
    let mut body_start = 0usize;
    while i < b.len() {
        if in_directive(i) {
            let (_, end) = directive_spans
                .iter()
                .copied()
                .find(|&(a, e)| i >= a && i < e)
                .unwrap();
            if depth == 0 {
                stmt_start = end;
            }
            i = end;
            continue;
        }
        match b[i] {
            b'{' => {
                if depth == 0 {
                    head_end = Some(i);
                    body_start = i;
                }
                depth += 1;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let head = &text[stmt_start..head_end.unwrap_or(i)];
                    // A function's body closes its definition; a struct's or an initializer's
                    // closes nothing (its `;` follows).
                    if is_function_head(head) {
                        bodies.push((body_start, i));
                        if let Some(name) = function_name(head)
                            && !has_word(head, "static")
                            && name.starts_with("ss_")
                        {
                            defines.push(name.to_string());
                        }
                        stmt_start = i + 1;
                        head_end = None;
                    }
                }
            }
            b';' if depth == 0 => {
                let stmt = &text[stmt_start..i];
                if let Some(name) = variable_name(stmt)
                    && name.starts_with("ss_")
                {
                    defines.push(name.to_string());
                }
                stmt_start = i + 1;
                head_end = None;
            }
            _ => {}
        }
        i += 1;
    }
    for (at, name) in identifiers(&text) {
        if !name.starts_with("ss_") {
            continue;
        }
        // `struct ss_real` names a type, not the variable of that name.
        let before = text[..at].trim_end();
        let word_before = identifiers(&before[before.len().saturating_sub(8)..])
            .last()
            .filter(|(k, w)| k + w.len() == before.len().min(8))
            .map(|(_, w)| *w);
        if matches!(word_before, Some("struct" | "union" | "enum")) {
            continue;
        }
        if header && !in_directive(at) && !bodies.iter().any(|&(a, e)| at > a && at < e) {
            continue;
        }
        mentions.push((at, name.to_string()));
    }
    Parsed {
        defines,
        mentions,
        includes: quoted_includes(raw),
    }
}

fn has_word(text: &str, word: &str) -> bool {
    identifiers(text).iter().any(|(_, w)| *w == word)
}

/// A head `... name(params) attributes` that a body follows: a function definition (not a
/// struct, union or enum, nor an initializer).
fn is_function_head(head: &str) -> bool {
    let t = head.trim();
    t.ends_with(')') && !t.contains('=') && !has_word(t, "typedef") && function_name(t).is_some()
}

/// The name a function's head declares: the first identifier followed by `(` that is not an
/// attribute or an operator.
fn function_name(head: &str) -> Option<&str> {
    let ids = identifiers(head);
    ids.into_iter()
        .find(|(at, name)| {
            !NOT_A_NAME.contains(name) && head[at + name.len()..].trim_start().starts_with('(')
        })
        .map(|(_, name)| name)
}

/// The variable a top-level declaration defines: not `extern`, `static` or `typedef`, not a
/// prototype; the name is the last identifier before `=` (or the end), past any `[...]`.
fn variable_name(stmt: &str) -> Option<&str> {
    let s = stmt.trim();
    if s.is_empty()
        || ["extern", "static", "typedef"]
            .iter()
            .any(|k| has_word(s, k))
    {
        return None;
    }
    let decl = match s.find('=') {
        Some(k) => &s[..k],
        None => s,
    };
    // A prototype or a macro's use: the name is followed by a parameter list.
    let mut d = decl.trim_end();
    while d.ends_with(']') {
        d = d[..d.rfind('[')?].trim_end();
    }
    if d.ends_with(')') {
        return None;
    }
    identifiers(d).last().map(|(_, n)| *n)
}

struct Preload {
    /// file -> parsed
    files: BTreeMap<String, Parsed>,
    raw: BTreeMap<String, String>,
}

fn read(dir: &Path) -> Preload {
    let mut files = BTreeMap::new();
    let mut raw = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let header = name.ends_with(".h") || name.ends_with(".def");
        if !(header || name.ends_with(".c")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        files.insert(name.clone(), parse(&text, header));
        raw.insert(name, text);
    }
    Preload { files, raw }
}

/// Every reference that breaks the layers, as `preload/file:line: message`.
fn violations(dir: &Path) -> Vec<String> {
    let p = read(dir);
    let mut out = Vec::new();
    let mut definer: BTreeMap<&str, &str> = BTreeMap::new();
    for (file, parsed) in &p.files {
        if layer_of(file).is_none() {
            out.push(format!(
                "preload/{file}: has no layer: add it to LAYERS in tests/preload_layers.rs and to docs/ARCHITECTURE.md"
            ));
        }
        for name in &parsed.defines {
            if let Some(other) = definer.insert(name, file)
                && other != file
            {
                out.push(format!(
                    "preload/{file}: `{name}` is defined in preload/{other} too"
                ));
            }
        }
    }
    for (file, parsed) in &p.files {
        let Some((rank, layer)) = layer_of(file) else {
            continue;
        };
        let text = &p.raw[file];
        let line_of = |at: usize| text[..at].matches('\n').count() + 1;
        let mut seen = std::collections::BTreeSet::new();
        for (at, name) in &parsed.mentions {
            let Some(&def) = definer.get(name.as_str()) else {
                continue;
            };
            if def == file || !seen.insert(name.clone()) {
                continue;
            }
            let Some((def_rank, def_layer)) = layer_of(def) else {
                continue;
            };
            if def_rank > rank {
                out.push(format!(
                    "preload/{file}:{}: {file} ({layer}) refers to `{name}` of preload/{def}, a higher layer ({def_layer})",
                    line_of(*at)
                ));
            }
        }
        for header in &parsed.includes {
            let (Some((h_rank, h_layer)), true) = (layer_of(header), p.files.contains_key(header))
            else {
                continue;
            };
            if h_rank > rank {
                out.push(format!(
                    "preload/{file}: {file} ({layer}) includes {header}, a header of a higher layer ({h_layer})"
                ));
            }
        }
    }
    out
}

/// The symbols defined in preload/, and by which file.
fn definers(dir: &Path) -> BTreeMap<String, String> {
    let p = read(dir);
    let mut out = BTreeMap::new();
    for (file, parsed) in p.files {
        for name in parsed.defines {
            out.insert(name, file.clone());
        }
    }
    out
}

fn preload() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("preload")
}

#[test]
fn every_interposer_file_refers_only_to_its_layer_and_below() {
    let found = violations(&preload());
    assert!(
        found.is_empty(),
        "{} references break the interposer's layers (docs/ARCHITECTURE.md, \"The interposer's layers\"):\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The parser finds the definitions the checker relies on: each kind (a function, a variable of a
/// struct type, a thread-local) where the source has it, and every `ss_` function or variable
/// ss_internal.h declares has a file that defines it (else a reference to it would go unchecked).
#[test]
fn the_definitions_are_found() {
    let defs = definers(&preload());
    for (name, file) in [
        ("ss_read_config", "base.c"),
        ("ss_real", "base.c"),
        ("ss_self", "base.c"),
        ("ss_out_record", "writer.c"),
        ("ss_thread_alloc", "threads.c"),
    ] {
        assert_eq!(
            defs.get(name).map(String::as_str),
            Some(file),
            "{name} in {defs:#?}"
        );
    }
    let header = strip(&std::fs::read_to_string(preload().join("ss_internal.h")).unwrap());
    let mut missing = Vec::new();
    // Each top-level declaration of the header: a prototype `... ss_x(...);` or `extern ... ss_x;`.
    let mut depth = 0i32;
    let mut stmt = String::new();
    for line in header.lines() {
        if depth == 0 && line.trim_start().starts_with('#') {
            stmt.clear();
            continue;
        }
        for c in line.chars().chain(std::iter::once('\n')) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ';' if depth == 0 => {
                    let s = std::mem::take(&mut stmt);
                    if has_word(&s, "typedef") || has_word(&s, "static") {
                        continue;
                    }
                    let name = if has_word(&s, "extern") {
                        identifiers(s.split('[').next().unwrap())
                            .last()
                            .map(|(_, n)| *n)
                    } else {
                        function_name(&s)
                    };
                    if let Some(n) = name.filter(|n| n.starts_with("ss_"))
                        && !defs.contains_key(n)
                    {
                        missing.push(n.to_string());
                    }
                    continue;
                }
                _ => {}
            }
            if depth == 0 {
                stmt.push(c);
            } else {
                stmt.clear();
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ss_internal.h declares these, and no file of preload/ defines them as the checker reads: {missing:?}"
    );
    assert!(defs.len() > 200, "only {} definitions found", defs.len());
}

/// The checker itself, on files written to break each rule (so that the test above can fail).
#[test]
fn the_checker_finds_each_kind_of_break() {
    let dir =
        std::env::temp_dir().join(format!("stallscope-preload-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    write(
        "ss_internal.h",
        "#define SS_ENTER() ss_enter_slow()\nstruct ss_thread *ss_enter_slow(void);\nextern int ss_window;\nstatic inline int ss_open(void) { return ss_window_open; }\n",
    );
    write(
        "base.c",
        "#include \"ss_internal.h\"\n#include \"lock_steps.h\"\nint ss_pid;\nstatic int ss_hidden;\n/* ss_thread_alloc() in a comment */\nvoid ss_calibrate(void) { const char *s = \"ss_out_record\"; (void)s; ss_thread_alloc(); }\n",
    );
    write(
        "writer.c",
        "#include \"ss_internal.h\"\nint ss_out_record(int t) { return t + ss_pid; }\n",
    );
    write(
        "threads.c",
        "#include \"ss_internal.h\"\n#include \"lock_steps.h\"\nstruct ss_thread *ss_thread_alloc(void) { ss_out_record(1); return 0; }\n",
    );
    write(
        "lifecycle.c",
        "struct ss_thread *ss_enter_slow(void) { return ss_thread_alloc(); }\n",
    );
    write("attach.c", "int ss_window_open = 0;\n");
    write("lock_steps.h", "");
    write("newthing.c", "");
    let found = violations(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let has = |start: &str, what: &str| {
        assert!(
            found
                .iter()
                .any(|f| f.starts_with(start) && f.contains(what)),
            "no {what:?} at {start} in {found:#?}"
        );
    };
    has(
        "preload/base.c:6",
        "refers to `ss_thread_alloc` of preload/threads.c, a higher layer (hooks)",
    );
    has(
        "preload/ss_internal.h:1",
        "`ss_enter_slow` of preload/lifecycle.c",
    );
    has(
        "preload/ss_internal.h:4",
        "`ss_window_open` of preload/attach.c",
    );
    has("preload/newthing.c", "has no layer");
    has(
        "preload/base.c",
        "includes lock_steps.h, a header of a higher layer (services)",
    );
    assert_eq!(found.len(), 5, "{found:#?}");
}
