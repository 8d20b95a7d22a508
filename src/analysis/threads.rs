//! One thread identity with one label. A thread (or a group of folded short threads) appears in
//! three lists of the model: the profile's records (`Profile::threads`), the summary's
//! (`Summary::threads`) and the sampled states' (`StateReport::threads`). All three carry its
//! serial; [`ThreadId`] is what they agree on, and [`Analysis::thread`] / [`Analysis::threads`]
//! join them by serial, never by position. Every view names a thread with [`ThreadId::label`].

use super::Analysis;
use super::states::ThreadStates;
use super::summary::ThreadSummary;
use crate::profile::ThreadStats;
use crate::profile::format::THREAD_MAIN;
use std::collections::HashMap;

/// Who a thread is: the same from any of the model's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadId<'a> {
    /// The profile's serial: the key that joins the lists.
    pub serial: u32,
    pub tid: u32,
    pub name: &'a str,
    pub main: bool,
    /// How many short threads the row stands for, when they were folded into one group.
    pub folded: Option<u32>,
}

impl<'a> ThreadId<'a> {
    pub fn of_profile(t: &'a ThreadStats) -> ThreadId<'a> {
        ThreadId {
            serial: t.serial,
            tid: t.tid,
            name: &t.name,
            main: t.flags & THREAD_MAIN != 0,
            folded: t.folded.map(|f| f.threads),
        }
    }

    pub fn of_summary(t: &'a ThreadSummary) -> ThreadId<'a> {
        ThreadId {
            serial: t.serial,
            tid: t.tid,
            name: &t.name,
            main: t.main,
            folded: t.folded,
        }
    }

    pub fn of_states(t: &'a ThreadStates) -> ThreadId<'a> {
        ThreadId {
            serial: t.serial,
            tid: t.tid,
            name: &t.name,
            main: t.main,
            folded: t.folded,
        }
    }

    /// The thread's name, `unnamed` when it has none.
    pub fn name_or_unnamed(&self) -> &'a str {
        if self.name.is_empty() {
            "unnamed"
        } else {
            self.name
        }
    }

    /// The one label every view prints: `worker [1234]`, the main thread `main [1233] (main)`, a group
    /// of folded short threads `worker ×236 (folded)`.
    pub fn label(&self) -> String {
        let name = self.name_or_unnamed();
        match self.folded {
            Some(n) => format!("{name} ×{n} (folded)"),
            None => format!(
                "{name} [{}]{}",
                self.tid,
                if self.main { " (main)" } else { "" }
            ),
        }
    }

    /// The label cut to at most `max_chars` characters: the name's middle gives way to `…` and
    /// the rest is kept, so that it still reads as the same words.
    pub fn short_label(&self, max_chars: usize) -> String {
        let full = self.label();
        let len = full.chars().count();
        if len <= max_chars {
            return full;
        }
        let name = self.name_or_unnamed();
        let name_len = name.chars().count();
        let rest_len = len - name_len;
        if rest_len < max_chars {
            // The name's start and its end: pool workers differ in their last characters
            // (`ThreadPoolExecutor-0_0`, `-0_1`).
            let keep = max_chars - rest_len - 1;
            let tail = keep / 3;
            let cut: String = name
                .chars()
                .take(keep - tail)
                .chain(['…'])
                .chain(name.chars().skip(name_len - tail))
                .collect();
            let rest: String = full.chars().skip(name_len).collect();
            format!("{cut}{rest}")
        } else {
            full.chars()
                .take(max_chars.saturating_sub(1))
                .chain(['…'])
                .collect()
        }
    }
}

/// The items of one of the thread lists by their serial: how the stages join the lists.
pub fn by_serial<T>(items: &[T], serial: impl Fn(&T) -> u32) -> HashMap<u32, &T> {
    items.iter().map(|t| (serial(t), t)).collect()
}

/// One thread as the model knows it: its identity, its record in the profile, its summary row,
/// its sampled states.
#[derive(Debug, Clone, Copy)]
pub struct ThreadView<'a> {
    pub id: ThreadId<'a>,
    pub record: &'a ThreadStats,
    pub summary: Option<&'a ThreadSummary>,
    pub states: Option<&'a ThreadStates>,
}

impl Analysis {
    /// The thread of this serial, joined from the profile, the summary and the states.
    pub fn thread(&self, serial: u32) -> Option<ThreadView<'_>> {
        let record = self.profile.threads.iter().find(|t| t.serial == serial)?;
        Some(self.view_of(record))
    }

    /// Every thread of the profile, in its order, joined by serial.
    pub fn threads(&self) -> impl Iterator<Item = ThreadView<'_>> {
        self.profile.threads.iter().map(|t| self.view_of(t))
    }

    /// The sampled states of a thread, by its serial.
    pub fn states_of(&self, serial: u32) -> Option<&ThreadStates> {
        self.states
            .as_ref()
            .and_then(|r| r.threads.iter().find(|t| t.serial == serial))
    }

    /// The sampled states of the profile's thread `i` (its position in `Profile::threads`, as
    /// wait-for edges name threads), joined by serial.
    pub fn states_at(&self, i: usize) -> Option<&ThreadStates> {
        self.states_index_at(i)
            .and_then(|k| self.states.as_ref().and_then(|r| r.threads.get(k)))
    }

    /// The position in `StateReport::threads` of the profile's thread `i`, joined by serial.
    pub fn states_index_at(&self, i: usize) -> Option<usize> {
        let serial = self.profile.threads.get(i)?.serial;
        self.states
            .as_ref()?
            .threads
            .iter()
            .position(|t| t.serial == serial)
    }

    /// The label of the profile's thread `i` (its position in `Profile::threads`), `?` when
    /// there is none.
    pub fn label_at(&self, i: usize) -> String {
        super::waitfor::thread_label(&self.profile, i)
    }

    /// The label of the thread (not a folded group) of this tid, for figures that keep only a
    /// tid (phases, OpenMP runs); an unknown tid is an unnamed thread.
    pub fn label_of_tid(&self, tid: u32) -> String {
        self.profile
            .threads
            .iter()
            .find(|t| t.tid == tid && t.folded.is_none())
            .map_or_else(
                || {
                    ThreadId {
                        serial: u32::MAX,
                        tid,
                        name: "",
                        main: false,
                        folded: None,
                    }
                    .label()
                },
                |t| ThreadId::of_profile(t).label(),
            )
    }

    fn view_of<'a>(&'a self, record: &'a ThreadStats) -> ThreadView<'a> {
        let serial = record.serial;
        ThreadView {
            id: ThreadId::of_profile(record),
            record,
            summary: self.summary.threads.iter().find(|t| t.serial == serial),
            states: self.states_of(serial),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &'static str, main: bool, folded: Option<u32>) -> ThreadId<'static> {
        ThreadId {
            serial: 3,
            tid: 1234,
            name,
            main,
            folded,
        }
    }

    #[test]
    fn labels() {
        assert_eq!(id("worker", false, None).label(), "worker [1234]");
        assert_eq!(id("sim", true, None).label(), "sim [1234] (main)");
        assert_eq!(id("", false, None).label(), "unnamed [1234]");
        assert_eq!(
            id("worker", false, Some(236)).label(),
            "worker ×236 (folded)"
        );
    }

    /// A profile of a main thread, a worker and a folded group of short threads, each with CPU
    /// samples, analysed offline.
    fn analysed() -> Analysis {
        use crate::profile::samples::{Sample, SampleKind, SamplingInfo};
        use crate::profile::{Folded, Profile};
        const START: u64 = 1_000_000;
        let thread = |serial: u32, name: &str, flags: u32, folded: Option<Folded>| {
            let tid = if folded.is_some() { 0 } else { 100 + serial };
            ThreadStats {
                flags,
                cpu_ns: 500_000_000,
                folded,
                ..ThreadStats::quiet(serial, tid, name, START, START + 1_000_000_000)
            }
        };
        let mut p = Profile::default();
        p.process.start_mono_ns = START;
        p.process.ncpus = 2;
        p.last_mono_ns = START + 1_000_000_000;
        p.sampling = Some(SamplingInfo::default());
        let group = Folded {
            threads: 236,
            allocating: 0,
            life_ns: 2_000_000_000,
        };
        p.threads = vec![
            thread(1, "sim", THREAD_MAIN, None),
            thread(2, "worker", 0, None),
            thread(3, "worker", 0, Some(group)),
        ];
        p.samples = (0..30)
            .map(|n| Sample {
                serial: 1 + (n % 3) as u32,
                mono_ns: START + 10_000_000 * (n + 1),
                pc: 0x4000,
                stack: None,
                weight_ns: 10_000_000,
                kind: SampleKind::Cpu,
                state: None,
                syscall: None,
                arg: 0,
                object: 0,
            })
            .collect();
        let options = super::super::Options {
            read_modules: false,
        };
        Analysis::of(p, "test.prof".into(), options)
    }

    #[test]
    fn one_thread_has_one_label_in_the_three_lists() {
        let mut a = analysed();
        // The lists are joined by serial, not by position: shuffle two of them.
        a.summary.threads.reverse();
        a.states
            .as_mut()
            .expect("sampled states")
            .threads
            .rotate_left(1);
        let labels: Vec<String> = a.threads().map(|t| t.id.label()).collect();
        assert_eq!(
            labels,
            ["sim [101] (main)", "worker [102]", "worker ×236 (folded)"]
        );
        for record in &a.profile.threads {
            let t = a.thread(record.serial).expect("the thread");
            let summary = t.summary.expect("its summary");
            let states = t.states.expect("its states");
            assert_eq!(ThreadId::of_summary(summary), t.id);
            assert_eq!(ThreadId::of_states(states), t.id);
            assert_eq!(ThreadId::of_summary(summary).label(), t.id.label());
            assert_eq!(ThreadId::of_states(states).label(), t.id.label());
        }
        assert!(a.thread(99).is_none());
        // Position 1 of the profile (serial 2) is at position 0 of the rotated states.
        assert_eq!(a.states_index_at(1), Some(0));
        assert_eq!(a.states_at(1).map(|t| t.serial), Some(2));
        assert_eq!(a.label_at(1), "worker [102]");
        assert_eq!(a.label_at(9), "?");
        assert_eq!(a.label_of_tid(101), "sim [101] (main)");
        assert_eq!(a.label_of_tid(0), "unnamed [0]");
    }

    #[test]
    fn short_label_cuts_the_names_middle_and_keeps_the_rest() {
        let t = id("a-very-long-thread-name-indeed", false, None);
        let s = t.short_label(20);
        assert_eq!(s.chars().count(), 20);
        assert_eq!(s, "a-very-l…deed [1234]");
        let pool = id("ThreadPoolExecutor-0_1", false, None).short_label(20);
        assert_eq!(pool, "ThreadPo…-0_1 [1234]");
        assert_eq!(id("worker", false, None).short_label(20), "worker [1234]");
    }
}
