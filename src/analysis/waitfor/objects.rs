//! The names of the objects waited for: a global or static lock by its symbol, a heap lock by the
//! stack that initialised it, else by its address.

use super::*;

/// Names every object of a lock edge (and of the summary's locks): a global or static lock by
/// its symbol, a heap lock by the stack that initialised it, else by its address.
pub(crate) fn name_objects(
    profile: &Profile,
    sym: &mut Symbolizer,
    summary: &Summary,
    edges: &[Edge],
    read_modules: bool,
) -> Vec<ObjectName> {
    let mut objects: Vec<u64> = edges
        .iter()
        .filter(|e| e.object != 0)
        .map(|e| e.object)
        .chain(summary.locks.iter().map(|l| l.address))
        .collect();
    objects.sort_unstable();
    objects.dedup();
    let mut data = DataSymbols::new(&profile.modules);
    let mut runtime = crate::analysis::runtime_locks::RuntimeLocks::default();
    objects
        .into_iter()
        .map(|object| {
            // A lock of a language runtime, by the data object holding it (runtime_locks.json).
            if read_modules && let Some((lock, symbol)) = runtime.name(&profile.modules, object) {
                return ObjectName {
                    object,
                    name: format!("{} in {symbol}", lock.words),
                    how: "runtime",
                };
            }
            let by_symbol = if read_modules {
                data.name(object)
            } else {
                None
            };
            if let Some((module, symbol)) = by_symbol {
                // A named OpenMP critical section's lock is the program's own variable.
                if let Some(name) = symbol.strip_prefix(".gomp_critical_user_") {
                    // clang's (libomp's) variable ends in `.var`.
                    let name = name.strip_suffix(".var").unwrap_or(name);
                    return ObjectName {
                        object,
                        name: format!("`{name}` ({module})"),
                        how: "symbol",
                    };
                }
                return ObjectName {
                    object,
                    name: format!("{symbol} ({module})"),
                    how: "symbol",
                };
            }
            // A stripped runtime's private lock, by the function its waiters waited in.
            let module = profile
                .modules
                .iter()
                .rfind(|m| m.lo <= object && object < m.hi)
                .map(|m| crate::symbols::file_name(&m.path).to_string());
            if let Some(module) = module
                && let Some(lock) = summary.locks.iter().find(|l| l.address == object)
                && let Some(e) = lock
                    .sites
                    .iter()
                    .find_map(|s| crate::analysis::runtime_locks::by_function(&module, &s.frames))
            {
                return ObjectName {
                    object,
                    name: e.words.clone(),
                    how: "runtime",
                };
            }
            // The unnamed critical section (libgomp's private lock: preload/omp.c names it 1).
            if object == 1
                && summary
                    .locks
                    .iter()
                    .any(|l| l.address == 1 && l.kind == "omp-critical")
            {
                return ObjectName {
                    object,
                    name: "(unnamed)".into(),
                    how: "symbol",
                };
            }
            let init = profile
                .lock_sites
                .iter()
                .filter(|l| l.address == object && l.role == LockRole::Init)
                .max_by_key(|l| l.events);
            if let Some(site) = init
                && let Some(stack) = profile.stacks.get(&site.stack)
            {
                let frames = sym.stack(stack);
                if let Some(f) = frames.get(user_frame(&frames))
                    && f.function.is_some()
                {
                    return ObjectName {
                        object,
                        name: format!("the lock initialised in {}", f.short_text()),
                        how: "init-site",
                    };
                }
            }
            ObjectName {
                object,
                name: format!("{object:#x}"),
                how: "address",
            }
        })
        .collect()
}
