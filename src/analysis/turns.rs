//! Threads that take turns on one object: each waited on it for another of them and was woken
//! by another (a condition variable or semaphore passed around as a lock, CPython's GIL). Such
//! an object is a resource the threads hold in turn, not an event one of them waits for: a wait
//! on it is a lock's cost (the taking-turns finding), never idleness that blame charges to the
//! thread holding it.

use super::waitfor::WaitFor;
use crate::profile::samples::WaitKind;

#[derive(Debug, Clone, PartialEq)]
pub struct Turns {
    pub object: u64,
    /// Indexes into `Profile::threads`, and their waits for one another on the object.
    pub members: Vec<usize>,
    pub waits: u64,
    pub wait_ns: u64,
}

impl WaitFor {
    /// The objects threads take turns on, the most waits first.
    pub fn turns(&self) -> Vec<Turns> {
        let passes_on = |e: &&super::waitfor::Edge| {
            matches!(e.kind, Some(WaitKind::Condition | WaitKind::Semaphore))
                && e.other.is_some_and(|o| o != e.waiter)
        };
        let mut objects: Vec<u64> = self
            .edges
            .iter()
            .filter(passes_on)
            .map(|e| e.object)
            .filter(|&o| o != 0)
            .collect();
        objects.sort_unstable();
        objects.dedup();
        let mut out = Vec::new();
        for object in objects {
            let edges: Vec<_> = self
                .edges
                .iter()
                .filter(|e| e.object == object)
                .filter(passes_on)
                .collect();
            let woke: Vec<usize> = edges.iter().filter_map(|e| e.other).collect();
            let mut members: Vec<usize> = edges
                .iter()
                .map(|e| e.waiter)
                .filter(|i| woke.contains(i))
                .collect();
            members.sort_unstable();
            members.dedup();
            if members.len() < 2 {
                continue;
            }
            let among = edges.iter().filter(|e| {
                members.contains(&e.waiter) && e.other.is_some_and(|o| members.contains(&o))
            });
            let (waits, wait_ns) =
                among.fold((0, 0), |acc, e| (acc.0 + e.waits_begun, acc.1 + e.wait_ns));
            out.push(Turns {
                object,
                members,
                waits,
                wait_ns,
            });
        }
        out.sort_by(|a, b| b.waits.cmp(&a.waits).then(a.object.cmp(&b.object)));
        out
    }
}
