//! The thread-state rules (docs/state-rules.txt, compiled in): which category a sample's frames
//! and system call put it in, parsed once and matched without allocating.

use super::categories::*;
use super::syscalls::public_libc_name;
use crate::profile::samples::SampleKind;
use crate::symbols::{Frame, is_own_module, is_runtime_frame, qualified_name};
use std::collections::HashMap;

static RULES_TEXT: &str = include_str!("../../docs/state-rules.txt");

#[derive(Debug, Clone, PartialEq, Eq)]
enum RuleKind {
    Function,
    CpuFunction,
    Syscall,
    AtomicIn,
    Module,
}

#[derive(Debug, Clone)]
pub(super) struct Rule {
    pub(super) category: Category,
    kind: RuleKind,
    pattern: String,
}

/// Glob matching with `*` as any run of characters.
/// (No allocation: it runs for every rule on every frame of every sample.)
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let (middle, last) = rest.rsplit_once('*').unwrap_or(("", rest));
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in middle.split('*') {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

pub struct Rules {
    pub(super) rules: Vec<Rule>,
    /// `by_function`'s answers by function name (each name recurs in thousands of samples).
    by_name: std::cell::RefCell<HashMap<String, Option<Category>>>,
}

impl Rules {
    pub fn parse(text: &str) -> Result<Rules, String> {
        let mut rules = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            // The pattern is the rest of the line (C++ names have spaces: `operator new`).
            let mut words = line.splitn(3, char::is_whitespace);
            let (Some(category), Some(kind), Some(pattern)) = (
                words.next(),
                words.next(),
                words.next().map(str::trim).filter(|p| !p.is_empty()),
            ) else {
                return Err(format!("line {}: expected `category kind pattern`", n + 1));
            };
            let category = Category::from_key(category)
                .ok_or_else(|| format!("line {}: unknown category {category}", n + 1))?;
            let kind = match kind {
                "function" => RuleKind::Function,
                "cpu-function" => RuleKind::CpuFunction,
                "syscall" => RuleKind::Syscall,
                "atomic-in" => RuleKind::AtomicIn,
                "module" => RuleKind::Module,
                other => return Err(format!("line {}: unknown rule kind {other}", n + 1)),
            };
            rules.push(Rule {
                category,
                kind,
                pattern: pattern.to_string(),
            });
        }
        Ok(rules).map(|rules| Rules {
            rules,
            by_name: Default::default(),
        })
    }

    pub fn builtin() -> Rules {
        Rules::parse(RULES_TEXT).expect("docs/state-rules.txt is valid")
    }

    /// The category of a frame: by its function's name, else by its module.
    pub(crate) fn by_frame(&self, f: &Frame) -> Option<Category> {
        f.function
            .as_deref()
            .and_then(|n| self.by_function(n))
            .or_else(|| {
                let file = crate::symbols::file_name(&f.module);
                self.rules
                    .iter()
                    .filter(|r| r.kind == RuleKind::Module)
                    .find(|r| glob(&r.pattern, file))
                    .map(|r| r.category)
            })
    }

    fn by_function(&self, name: &str) -> Option<Category> {
        if let Some(c) = self.by_name.borrow().get(name) {
            return *c;
        }
        let c = self.match_function(name);
        self.by_name.borrow_mut().insert(name.to_string(), c);
        c
    }

    fn match_function(&self, name: &str) -> Option<Category> {
        let (bare, public) = rule_names(name);
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::Function)
            .find(|r| glob(&r.pattern, bare) || glob(&r.pattern, public))
            .map(|r| r.category)
    }

    fn by_syscall(&self, name: &str) -> Option<Category> {
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::Syscall)
            .find(|r| glob(&r.pattern, name))
            .map(|r| r.category)
    }

    /// The category of a CPU sample at a locked instruction that no function rule decided.
    pub fn atomic(&self, module: &str) -> Category {
        let file = crate::symbols::file_name(module);
        self.rules
            .iter()
            .filter(|r| r.kind == RuleKind::AtomicIn)
            .find(|r| glob(&r.pattern, file))
            .map_or(Category::Atomic, |r| r.category)
    }

    /// The category of a sample whose frames are `frames` (innermost first), and the index of
    /// the frame that decided it: by what the thread does (docs/STATES.md, "How samples are
    /// classified"). `syscall` is an off-CPU sample's system call (None: not in one), `word` what
    /// its futex word is, when the interposer saw waits on it; `spinning` whether a CPU sample's
    /// instruction is in a pause loop or at a system call (spinning, yielding or going to sleep).
    pub fn classify(
        &self,
        frames: &[Frame],
        kind: SampleKind,
        syscall: Option<&str>,
        word: Option<&super::futex::Word>,
        spinning: bool,
    ) -> (Category, Option<usize>) {
        use super::runtime::Role;
        if kind == SampleKind::Kernel {
            // Running time of a thread that blocks the sampling signal: no instruction to look at.
            return (Category::Compute, None);
        }
        if let Some(i) = profiler_frame(frames) {
            return (Category::Profiler, Some(i));
        }
        let runtime = super::runtime::wait_of(frames);
        // A futex sleep on a word the threads used as a lock is a lock wait, even in a runtime
        // library whose module entry guesses idle (oneTBB's mutex sleeps in libtbb).
        if word.is_some_and(|w| w.role == Role::Lock) {
            return (Category::Lock, runtime.map(|(_, i)| i));
        }
        if let Some((_, i)) = runtime.filter(|(e, _)| e.role == Role::Idle) {
            return (Category::Idle, Some(i));
        }
        if kind == SampleKind::Cpu {
            // Spinning or yielding inside a runtime's lock acquisition is waiting for that lock.
            // An entry point every acquisition calls (`omp_set_lock`, a critical section's start)
            // waits only where it spins or goes to sleep: elsewhere in it the thread does the
            // acquisition's own work (a single thread's critical sections had read 55% lock
            // waits).
            if let Some((_, i)) =
                runtime.filter(|(e, _)| e.role == Role::Lock && (spinning || !e.every_call))
            {
                return (Category::Lock, Some(i));
            }
            // Work wherever it lands: CPU time inside a system call or a wait function's own
            // code is computation, never I/O or blocking.
            for (i, f) in frames.iter().enumerate() {
                if let Some(c) = self.by_frame(f) {
                    return match c {
                        Category::Io | Category::Blocked => (Category::Compute, Some(i)),
                        c => (c, Some(i)),
                    };
                }
            }
            return (Category::Compute, None);
        }
        let name = syscall.unwrap_or("none");
        if name.starts_with("futex") {
            let by_role = |r: Role| match r {
                Role::Lock => Category::Lock,
                Role::Wait => Category::Blocked,
                Role::Idle => Category::Idle,
                Role::Work => Category::Blocked, /* never a wait: wait_of leaves it out */
            };
            if let Some(w) = word {
                return (by_role(w.role), runtime.map(|(_, i)| i));
            }
            if let Some((e, i)) = runtime {
                return (by_role(e.role), Some(i));
            }
            // A wait inside a known lock or wait function of the C library.
            for (i, f) in frames.iter().enumerate() {
                if let Some(c @ (Category::Lock | Category::Blocked)) =
                    f.function.as_deref().and_then(|n| self.by_function(n))
                {
                    return (c, Some(i));
                }
            }
        }
        (self.by_syscall(name).unwrap_or(Category::Blocked), None)
    }
}

/// The frame of stallscope's own work when a sample landed in it: the innermost frame of the
/// interposer is one of its internal functions (`ss_*`, `stallscope_*`: a heap snapshot, not a
/// hook the program called, whose slow part is named after the hooked function), no frame of
/// that run of interposer frames is a hook, and every frame inside it is the C library's or the
/// runtime's (so the thread-start and `main` wrappers, outside the program's frames, do not
/// count).
fn profiler_frame(frames: &[Frame]) -> Option<usize> {
    let own = |f: &Frame| is_own_module(&f.module);
    let first = frames.iter().position(own)?;
    if frames[..first].iter().any(|f| !is_runtime_frame(f)) {
        return None;
    }
    let internal = |f: &Frame| {
        f.function
            .as_deref()
            .is_some_and(|n| n.starts_with("ss_") || n.starts_with("stallscope_"))
    };
    frames[first..]
        .iter()
        .take_while(|f| own(f))
        .all(internal)
        .then_some(first)
}

/// The names a function's rules match: its bare name, without arguments, return type or a
/// compiler's clone suffix (`_int_free.isra.0`, `unlink_chunk.constprop.0`), and the public name
/// of a glibc internal one (`__GI___sched_yield`, `__libc_sendmsg` match the rules of their
/// public functions too).
pub(super) fn rule_names(name: &str) -> (&str, &str) {
    let name = qualified_name(name);
    let bare = name.split('(').next().unwrap_or(name).trim();
    let bare = bare.split('.').next().unwrap_or(bare);
    (bare, public_libc_name(bare))
}
