//! Locks of language runtimes named by the data object that holds them (the table is data:
//! `runtime_locks.json`): a thread that waits on an address inside CPython's `_PyRuntime` waits
//! for the GIL. Only naming: which threads take turns is decided by their behaviour
//! (findings/causes.rs), never by these names.

use crate::profile::Module;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

#[derive(Debug, Deserialize)]
pub struct RuntimeLock {
    pub symbol: String,
    pub modules: Vec<String>,
    pub runtime: String,
    pub words: String,
}

#[derive(Debug, Deserialize)]
struct Table {
    locks: Vec<RuntimeLock>,
    #[serde(default)]
    by_function: Vec<LockByFunction>,
}

/// A lock a stripped runtime keeps in a private static, known by the function that waits on it.
#[derive(Debug, Deserialize)]
pub struct LockByFunction {
    pub waited_in: Vec<String>,
    pub modules: Vec<String>,
    pub runtime: String,
    pub words: String,
}

static TABLE_TEXT: &str = include_str!("runtime_locks.json");

fn whole_table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| serde_json::from_str(TABLE_TEXT).expect("runtime_locks.json is valid"))
}

pub fn table() -> &'static [RuntimeLock] {
    &whole_table().locks
}

/// The runtime lock at `address` in module `module_file` that a waiter whose stack holds
/// `frames` waited on, by the function it waited in (the lock has no symbol of its own).
pub fn by_function(
    module_file: &str,
    frames: &[crate::symbols::Frame],
) -> Option<&'static LockByFunction> {
    whole_table().by_function.iter().find(|e| {
        e.modules.iter().any(|m| module_file.contains(m.as_str()))
            && frames.iter().any(|f| {
                f.function.as_deref().is_some_and(|n| {
                    let n = crate::symbols::qualified_name(n);
                    let n = n.split('(').next().unwrap_or(n);
                    e.waited_in
                        .iter()
                        .any(|p| crate::analysis::states::glob(p, n))
                })
            })
    })
}

/// What the table's symbols of one module span: (start, size, table index), module-relative.
type Spans = Vec<(u64, u64, usize)>;

/// Names objects by the runtime lock tables, reading each module's symbols at most once.
#[derive(Default)]
pub struct RuntimeLocks {
    spans: HashMap<usize, Spans>,
}

impl RuntimeLocks {
    /// The runtime lock holding `address` ("CPython's GIL (...)") and the symbol with its offset
    /// (`_PyRuntime+392`), if a table entry's data object in a matching module holds it.
    pub fn name(
        &mut self,
        modules: &[Module],
        address: u64,
    ) -> Option<(&'static RuntimeLock, String)> {
        let mi = modules
            .iter()
            .rposition(|m| m.lo <= address && address < m.hi)?;
        let module = &modules[mi];
        let file = Path::new(&module.path)
            .file_name()?
            .to_string_lossy()
            .to_string();
        let entries: Vec<usize> = (0..table().len())
            .filter(|&i| table()[i].modules.iter().any(|m| file.contains(m.as_str())))
            .collect();
        if entries.is_empty() {
            return None;
        }
        let spans = self
            .spans
            .entry(mi)
            .or_insert_with(|| spans_of(&module.path, &entries));
        let offset = address.checked_sub(module.bias)?;
        let &(start, _, i) = spans
            .iter()
            .find(|&&(start, size, _)| start <= offset && offset < start + size.max(1))?;
        let lock = &table()[i];
        let at = offset - start;
        let symbol = if at == 0 {
            lock.symbol.clone()
        } else {
            format!("{}+{at}", lock.symbol)
        };
        Some((lock, symbol))
    }
}

/// The table entries' data symbols in the file at `path` (its symbol table and its dynamic
/// symbols: a stripped executable keeps the exported ones).
fn spans_of(path: &str, entries: &[usize]) -> Spans {
    use object::{Object, ObjectSymbol};
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for sym in file.symbols().chain(file.dynamic_symbols()) {
        let Ok(name) = sym.name() else {
            continue;
        };
        if let Some(&i) = entries.iter().find(|&&i| table()[i].symbol == name)
            && !out.iter().any(|&(s, _, _)| s == sym.address())
        {
            out.push((sym.address(), sym.size(), i));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_names_the_gil() {
        let t = table();
        assert!(
            t.iter()
                .any(|l| l.symbol == "_PyRuntime" && l.words.contains("GIL"))
        );
    }

    #[test]
    fn cpythons_gil_is_named_in_the_installed_python() {
        // The python3 of the machine, when it has one: its _PyRuntime is an exported symbol.
        let Ok(exe) = std::fs::canonicalize("/usr/bin/python3") else {
            return;
        };
        let path = exe.to_string_lossy().to_string();
        let spans = spans_of(&path, &[0]);
        if spans.is_empty() {
            return; // a python3 whose runtime lives in libpython
        }
        let (start, size, _) = spans[0];
        let module = Module {
            bias: 0,
            lo: 0,
            hi: u64::MAX,
            seen_mono_ns: 0,
            build_id: Vec::new(),
            path,
            gone_mono_ns: None,
        };
        let mut names = RuntimeLocks::default();
        let (lock, symbol) = names.name(&[module], start + 392).expect("named");
        assert!(lock.words.contains("GIL"));
        assert_eq!(symbol, "_PyRuntime+392");
        assert!(size > 392);
    }
}
