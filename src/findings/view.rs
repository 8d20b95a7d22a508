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

pub use crate::symbols::short_function;

/// `function at file:line` (file's base name), `function (module)` without debug info, or
/// `module+0xoffset` without a function: `Frame::short_text` of the JSON frame.
pub fn frame_text(frame: &Value) -> String {
    let text = |k: &str| frame.get(k).and_then(Value::as_str).map(str::to_string);
    let offset = text("offset")
        .and_then(|o| u64::from_str_radix(o.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0);
    crate::symbols::Frame {
        function: text("function"),
        file: text("file"),
        line: frame.get("line").and_then(Value::as_u64).map(|l| l as u32),
        module: text("module").unwrap_or_default(),
        offset,
        inlined: false,
    }
    .short_text()
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
    fn a_frame_without_a_function_is_named_by_module_and_offset() {
        // A stripped program: the same name the rest of the report gives it, never `??`.
        let site = json!({"user_frame": 0, "frames": [
            {"function": null, "file": null, "line": null, "module": "/usr/bin/sort",
             "offset": "0xb25c", "inlined": false}]});
        assert_eq!(user_frame_text(&site).as_deref(), Some("sort+0xb25c"));
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
