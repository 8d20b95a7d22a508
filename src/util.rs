//! Small shared helpers, one copy each: ratios, human-readable numbers and terminal styling.

use std::io::IsTerminal;

/// A number that ratios and formatting take as it is: counters (`u64`, `usize`) and estimates
/// (`f64`), so that callers need no casts.
pub trait AsF64: Copy {
    fn as_f64(self) -> f64;
}

impl AsF64 for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}

impl AsF64 for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl AsF64 for usize {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl AsF64 for u32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl AsF64 for i32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl AsF64 for i64 {
    fn as_f64(self) -> f64 {
        self as f64
    }
}

/// A share estimated from `samples` samples, about two standard errors below (the binomial's):
/// what a share from few samples can be trusted to reach. The share itself without samples.
pub fn share_lower_bound(share: f64, samples: f64) -> f64 {
    if samples <= 0.0 {
        return share;
    }
    (share - 2.0 * (share * (1.0 - share) / samples).sqrt()).max(0.0)
}

/// `part / whole`, or 0 when `whole` is not positive (an empty profile has no shares).
pub fn ratio(part: impl AsF64, whole: impl AsF64) -> f64 {
    let whole = whole.as_f64();
    if whole > 0.0 {
        part.as_f64() / whole
    } else {
        0.0
    }
}

/// A duration in nanoseconds as a short human string: 850 ns, 12.3 µs, 4.56 ms, 1.234 s.
pub fn fmt_ns(ns: impl AsF64) -> String {
    let ns = ns.as_f64();
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// A byte count with a binary unit: 512 B, 1.5 KiB, 3.2 MiB.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A count with thousands separators: 1,234,567.
pub fn fmt_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn fmt_pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Gives SIGPIPE its default action (the process ends quietly when its output's reader is gone).
pub fn default_sigpipe() {
    // SAFETY: setting a standard disposition; no handler runs.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// ANSI styling, only when writing to a terminal and NO_COLOR is not set.
#[derive(Clone, Copy)]
pub struct Style {
    pub enabled: bool,
}

impl Style {
    pub fn for_stdout() -> Self {
        Style {
            enabled: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    pub fn for_stderr() -> Self {
        Style {
            enabled: std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    pub fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }
    pub fn dim(&self, text: &str) -> String {
        self.wrap("2", text)
    }
    pub fn warn(&self, text: &str) -> String {
        self.wrap("33", text)
    }
}

/// A horizontal bar of `width` cells for `share` in [0, 1], with eighth-cell resolution.
pub fn bar(share: f64, width: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = (share.clamp(0.0, 1.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(PARTS[eighths % 8]);
    }
    s
}

/// Text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What tests do when a tool they need is missing (chromium, go, heaptrack, g++, a library):
/// in CI, where everything is installed (the `CI` variable is set, as by .ci/run), they fail
/// and say what to install; elsewhere they say SKIPPED and what to install, and return. The unit
/// tests and the integration tests (tests/common) use this one policy.
pub mod testing {
    /// Whether the tests run in CI.
    pub fn in_ci() -> bool {
        std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
    }

    /// Whether a test can go on: `present` says whether `what` is there, `install` how to get it.
    pub fn have(what: &str, present: bool, install: &str) -> bool {
        if present {
            return true;
        }
        assert!(
            !in_ci(),
            "{what} is needed by this test and CI must have it: {install}"
        );
        eprintln!("SKIPPED: {what} is missing ({install})");
        println!("SKIPPED: {what} is missing ({install})");
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_human() {
        assert_eq!(fmt_count(1234567), "1,234,567");
        assert_eq!(fmt_count(12), "12");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_ns(2_500_000.0), "2.50 ms");
        assert_eq!(bar(0.5, 4), "██");
        assert_eq!(bar(0.0, 4), "");
        assert_eq!(fmt_ns(2_500u64), "2.5 µs");
        assert_eq!(ratio(1u64, 4u64), 0.25);
        assert_eq!(ratio(1.0, 0u64), 0.0);
    }
}
