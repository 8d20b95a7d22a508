//! The case studies `stallscope demo` runs: their sources (embedded, so the binary works
//! anywhere), their variants, and which figure shows the problem that moved.

/// The figure whose change between the slow and the fixed variant the verdict reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// Allocator time as a share of thread CPU time.
    AllocatorShare,
    /// Time waiting for locks: pthread waits, the thread states' lock time when sampled, else the
    /// share of the threads' lives spent off the CPU (glibc-internal locks are not interposed).
    LockWait,
    /// The mean time per `malloc` of a phase against an earlier run of the same phase.
    PhaseMalloc,
}

pub struct CaseStudy {
    pub name: &'static str,
    /// One line for `demo --list`.
    pub summary: &'static str,
    pub file: &'static str,
    pub source: &'static str,
    /// Variants benchmarked, in order; the first is the slow one every other is compared with.
    pub variants: &'static [&'static str],
    /// Variants profiled whose findings are shown (the slow ones).
    pub slow: &'static [&'static str],
    /// The variant the verdict names as the fix.
    pub fixed: &'static str,
    pub moved: &'static [Moved],
    /// Also run `stallscope bench --order-effect` on it (the stallscope protocol).
    pub order_effect: bool,
}

/// Headers the case sources include, written next to them.
pub const HEADERS: [(&str, &str); 2] = [
    ("case_common.h", include_str!("../../demos/case_common.h")),
    ("stallscope.h", include_str!("../../include/stallscope.h")),
];

pub const CASES: [CaseStudy; 4] = [
    CaseStudy {
        name: "serialize",
        summary: "1M game objects as text, one thread per core: sprintf vs std::to_chars, and fprintf to one shared FILE",
        file: "serialize.cpp",
        source: include_str!("../../demos/serialize.cpp"),
        variants: &["slow", "fixed", "shared_file"],
        slow: &["slow", "shared_file"],
        fixed: "fixed",
        moved: &[Moved::AllocatorShare, Moved::LockWait],
        order_effect: false,
    },
    CaseStudy {
        name: "small_strings",
        summary: "a tokenizer keeping short strings: two allocations per string vs a small-buffer string vs a bitmap pool",
        file: "small_strings.cpp",
        source: include_str!("../../demos/small_strings.cpp"),
        variants: &["slow", "fixed", "pool"],
        slow: &["slow"],
        fixed: "fixed",
        moved: &[Moved::AllocatorShare],
        order_effect: false,
    },
    CaseStudy {
        name: "stream_parse",
        summary: "15 MB of entities parsed in parallel: std::istringstream >> vs std::from_chars",
        file: "stream_parse.cpp",
        source: include_str!("../../demos/stream_parse.cpp"),
        variants: &["slow", "fixed"],
        slow: &["slow"],
        fixed: "fixed",
        moved: &[Moved::AllocatorShare, Moved::LockWait],
        order_effect: false,
    },
    CaseStudy {
        name: "bench_order",
        summary: "an unordered_set insert benchmark after building and destroying big std::map/std::list vs in a fresh heap",
        file: "bench_order.cpp",
        source: include_str!("../../demos/bench_order.cpp"),
        variants: &["slow", "fixed"],
        slow: &["slow"],
        fixed: "fixed",
        moved: &[Moved::PhaseMalloc, Moved::AllocatorShare],
        order_effect: true,
    },
];

pub fn find(name: &str) -> Option<&'static CaseStudy> {
    CASES.iter().find(|c| c.name == name)
}

impl CaseStudy {
    /// The executable's name (the source's stem).
    pub fn program(&self) -> &'static str {
        self.file.trim_end_matches(".cpp")
    }

    /// Every variant profiled: the slow ones and the fix, each once.
    pub fn profiled(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = self.slow.to_vec();
        if !v.contains(&self.fixed) {
            v.push(self.fixed);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_consistent() {
        for c in &CASES {
            assert_eq!(
                c.variants[0], "slow",
                "{}: the baseline comes first",
                c.name
            );
            assert!(c.variants.contains(&c.fixed), "{}", c.name);
            for v in c.slow {
                assert!(c.variants.contains(v), "{}: {v}", c.name);
                assert!(c.source.contains(&format!("\"{v}\"")), "{}: {v}", c.name);
            }
            assert!(find(c.name).is_some());
        }
    }
}
