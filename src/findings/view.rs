//! Reading the report JSON: numbers that may be missing, frames, user frames, and the
//! `stallscope bench` commands that measure a remedy. Missing keys read as absent, never panic.

use serde_json::Value;

/// A number at `path`, if present (integer or float).
pub fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_f64()
}

/// The array at `path`, or an empty slice.
pub fn array<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `a / b`, or 0 when `b` is not positive.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// A C++ function name without its template arguments, parameters and return type:
/// `std::istream& std::operator>><char>(std::istream&, std::string&)` -> `std::operator>>`.
pub fn short_function(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        // Operator names hold brackets that are not template or parameter brackets.
        if depth == 0 && out.ends_with("operator") {
            let op: String = rest
                .chars()
                .take_while(|c| "<>=!+-*/%&|^~[]()".contains(*c))
                .collect();
            // Drop what opens the parameters or the template arguments: `<<(`, `>><`, `<<<`.
            let op = if op.starts_with("()") {
                "()".to_string()
            } else {
                let op = op.strip_suffix('(').unwrap_or(&op);
                match op.strip_suffix('<') {
                    Some(shorter) if op.len() > 2 => shorter.to_string(),
                    _ => op.to_string(),
                }
            };
            if !op.is_empty() {
                out.push_str(&op);
                rest = &rest[op.len()..];
                continue;
            }
        }
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    match words.as_slice() {
        [] => name.to_string(),
        [.., before, last] if before.ends_with("operator") => format!("{before} {last}"),
        [.., last] => last.trim_start_matches(['&', '*']).to_string(),
    }
}

/// `function at file:line` (file's base name), or `function (module)` without debug info.
pub fn frame_text(frame: &Value) -> String {
    let function = frame
        .get("function")
        .and_then(Value::as_str)
        .map_or_else(|| "??".to_string(), short_function);
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    match (
        frame.get("file").and_then(Value::as_str),
        frame.get("line").and_then(Value::as_u64),
    ) {
        (Some(file), Some(line)) => format!("{function} at {}:{line}", base(file)),
        (Some(file), None) => format!("{function} in {}", base(file)),
        _ => match frame.get("module").and_then(Value::as_str) {
            Some(m) => format!("{function} ({})", base(m)),
            None => function,
        },
    }
}

/// A site's user frame: `user_frame` is an index into `frames` (allocation and lock sites) or
/// already a text (thread-state sites, docs/STATES.md).
pub fn user_frame_text(site: &Value) -> Option<String> {
    match site.get("user_frame")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => {
            let i = n.as_u64()? as usize;
            array(site, &["frames"]).get(i).map(frame_text)
        }
        _ => None,
    }
}

/// The profiled command as one shell word list, quoted for `stallscope bench`.
fn quoted_command(report: &Value) -> String {
    let words: Vec<&str> = array(report, &["command"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if words.is_empty() {
        return "'PROGRAM ARGS'".to_string();
    }
    let line = shell_words::join(&words);
    shell_words::quote(&line).into_owned()
}

/// The command that benchmarks the profiled program under other allocators.
pub fn bench_allocators(report: &Value) -> String {
    format!(
        "`stallscope bench --allocators glibc,jemalloc,mimalloc {}`",
        quoted_command(report)
    )
}

/// The command that benchmarks the profiled program at several thread counts.
pub fn bench_threads(report: &Value) -> String {
    format!(
        "`stallscope bench --threads 1,2,4 {}`",
        quoted_command(report)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn user_frame_reads_index_or_text() {
        let site = json!({"user_frame": 1, "frames": [
            {"function": "operator new(unsigned long)", "module": "/usr/lib/libstdc++.so.6"},
            {"function": "parse(int)", "file": "/src/p.cpp", "line": 12}]});
        assert_eq!(user_frame_text(&site).as_deref(), Some("parse at p.cpp:12"));
        let text = json!({"user_frame": "worker at sim.cpp:12"});
        assert_eq!(
            user_frame_text(&text).as_deref(),
            Some("worker at sim.cpp:12")
        );
        assert_eq!(user_frame_text(&json!({"user_frame": null})), None);
        assert_eq!(
            user_frame_text(&json!({"user_frame": 5, "frames": []})),
            None
        );
    }

    #[test]
    fn bench_commands_quote_the_profiled_command() {
        let r = json!({"command": ["./prog", "a b"]});
        assert_eq!(
            bench_allocators(&r),
            r#"`stallscope bench --allocators glibc,jemalloc,mimalloc './prog '\''a b'\'''`"#
        );
        assert_eq!(
            bench_threads(&json!({"command": ["./prog"]})),
            "`stallscope bench --threads 1,2,4 ./prog`"
        );
    }
}
