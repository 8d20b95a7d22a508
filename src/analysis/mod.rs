//! The analysis: one typed model of a profile, built once, that every view reads (the terminal
//! report and its JSON, html, export, diff, demo, bench). Nothing reads the report's JSON back.
//!
//! It is built in stages, each a function of the profile (and of the stages before it), so that
//! a new kind of figure is a new stage and a new field here:
//! 1. [`summary::summarize`]: per thread, per allocator function, per lock, from the counters;
//! 2. [`sites::fill`]: the sampled allocation and lock stacks, symbolized, with their estimates;
//! 3. [`phases::build`]: phases, heap snapshots and slow-phase flags;
//! 4. [`states::build`]: thread-state samples classified, per thread, slice and stack; the locks
//!    their futex words name ([`locknames::name_site_locks`]);
//! 5. [`waitfor::build`]: who waited for whom on what, object names, the critical path;
//! 6. [`concurrency::build`], [`efficiency::build`] and [`blame::build`]: threads over time, the
//!    working threads' efficiency, and waiting for work charged to the work that ran meanwhile.
//!
//! The analysis holds figures only: what they mean (`crate::findings`) is worked out on the
//! finished figures, as the last stage of the model of a run (`crate::model::Model`).

pub mod asked_threads;
pub mod blame;
pub mod blind;
pub mod categories;
pub mod collapsed;
pub mod concurrency;
pub mod efficiency;
pub mod futex;
pub mod locknames;
pub mod path_asleep;
pub mod phases;
pub mod runtime;
pub mod runtime_locks;
pub mod sampled;
pub mod sites;
pub mod state_rules;
pub mod states;
pub mod summary;
pub mod syscalls;
pub mod threads;
pub mod turns;
pub mod unhooked_locks;
pub mod waitfor;

use crate::profile::{self, Profile};
use crate::symbols::Symbolizer;
use crate::symbols::code::CodeReader;
use anyhow::Result;
use std::path::Path;

/// How the analysis may look beyond the profile file.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Read the profiled modules' files (and debug files) to name frames and decode
    /// instructions. Without it every frame is `module+offset` and no sample is `atomic` by its
    /// instruction: for figures that need no names, and for untrusted profiles.
    pub read_modules: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { read_modules: true }
    }
}

/// A profile analysed: what every view shows.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// The profile's path, as the user gave it.
    pub path: String,
    pub profile: Profile,
    pub summary: summary::Summary,
    pub phases: phases::PhaseReport,
    /// Thread states, when the profile has thread-state samples.
    pub states: Option<states::StateReport>,
    /// Wait-for edges and the critical path, when the profile recorded waits.
    pub waitfor: Option<waitfor::WaitFor>,
    /// Concurrency over time, when the profile has the kernel's per-thread figures.
    pub concurrency: Option<concurrency::Concurrency>,
    /// The working threads' efficiency, when two or more threads worked.
    pub efficiency: Option<efficiency::WorkingEfficiency>,
    /// Waiting for work charged to the work that ran meanwhile, when the profile has
    /// thread-state samples.
    pub blame: Option<blame::Blame>,
    /// Samples off a CPU whose state could not be read (a process made non-dumpable).
    pub blind: Option<blind::Blindness>,
    /// What each futex word the interposer saw waits on is (a runtime's lock, condition, idle
    /// worker): one classification for the lock list, the thread states and the findings.
    pub futex_words: futex::Words,
    /// The locks' names when the profile has no waits (else `waitfor`'s names hold them).
    pub lock_names: Vec<waitfor::ObjectName>,
}

impl Analysis {
    /// Reads, validates and analyses a profile file.
    pub fn read(path: &Path) -> Result<Analysis> {
        Analysis::read_with(path, Options::default())
    }

    pub fn read_with(path: &Path, options: Options) -> Result<Analysis> {
        let profile = profile::read(path)?;
        Ok(Analysis::of(profile, path.display().to_string(), options))
    }

    /// Analyses a profile already read.
    pub fn of(profile: Profile, path: String, options: Options) -> Analysis {
        let (summary, states, waitfor, futex_words, lock_names) = {
            let mut sym = if options.read_modules {
                Symbolizer::new(&profile)
            } else {
                Symbolizer::offline(&profile)
            };
            let mut code = if options.read_modules {
                CodeReader::default()
            } else {
                CodeReader::offline()
            };
            let mut summary = summary::summarize(&profile);
            sites::fill(&profile, &mut sym, &mut summary);
            let futex_words = futex::classify(&profile, &mut summary);
            for r in &mut summary.omp_regions {
                let mut frames = sym.address(r.address, profile.process.start_mono_ns);
                // A call site's innermost frame holds the pragma (in a function inlined into
                // another too); a body's is its outermost, the outlined function itself.
                r.frame = if r.call_site && !frames.is_empty() {
                    Some(frames.swap_remove(0))
                } else {
                    frames.pop()
                };
            }
            summary::merge_omp_regions(&mut summary.omp_regions);
            summary.omp_regions.sort_by(|a, b| {
                b.barrier_ns
                    .cmp(&a.barrier_ns)
                    .then(a.address.cmp(&b.address))
            });
            summary.omp_runs = summary::omp_runs(&profile, &summary.omp_regions);
            for run in summary.omp_runs.iter_mut().filter(|r| r.tbb) {
                let frames = (run.body as u32)
                    .checked_sub(1)
                    .and_then(|id| profile.stacks.get(&id))
                    .map(|stack| sym.stack(stack))
                    .unwrap_or_default();
                run.tbb_words = Some(summary::tbb_algorithm_words(&frames));
            }
            let mut states = states::build(&profile, &mut sym, &mut code, &futex_words);
            if let Some(r) = states.as_mut() {
                locknames::name_site_locks(
                    r,
                    &profile,
                    &mut sym,
                    options.read_modules,
                    &futex_words,
                    &summary
                        .locks
                        .iter()
                        .filter(|l| l.runtime.is_none() && l.address != 0)
                        .map(|l| (l.address, l.kind))
                        .collect(),
                );
            }
            summary::net_allocator_time(&mut summary, states.as_ref());
            unhooked_locks::sampled_lock_waits(&mut summary, states.as_ref());
            let waitfor = waitfor::build(
                &profile,
                &mut sym,
                &summary,
                states.as_ref(),
                &futex_words.lock_of,
                options.read_modules,
            );
            // Without waits there is no wait-for graph, but the locks still have names.
            let lock_names = if waitfor.is_none() {
                waitfor::name_objects(&profile, &mut sym, &summary, &[], options.read_modules)
            } else {
                Vec::new()
            };
            sym.finish();
            (summary, states, waitfor, futex_words, lock_names)
        };
        let phases = phases::build(&profile);
        let concurrency = states
            .as_ref()
            .and_then(|s| concurrency::build(&profile, s, &futex_words));
        let efficiency = efficiency::build(&summary, states.as_ref(), concurrency.is_some());
        let blind = blind::of(&profile);
        let blame = states.as_ref().and_then(|s| {
            blame::build(
                &profile,
                s,
                concurrency.as_ref(),
                &summary,
                waitfor.as_ref(),
            )
        });
        let mut analysis = Analysis {
            path,
            profile,
            summary,
            phases,
            states,
            waitfor,
            concurrency,
            efficiency,
            blame,
            blind,
            futex_words,
            lock_names,
        };
        analysis.name_pthread_state_locks();
        analysis
    }

    /// How thread-state sampling ran (None: a profile without it).
    pub fn sampling(&self) -> Option<&crate::profile::samples::SamplingInfo> {
        self.profile.sampling.as_ref()
    }

    /// The name of a lock or other object threads waited on: its symbol, the place that
    /// initialised it, else its address.
    pub fn object_name(&self, object: u64) -> String {
        self.waitfor
            .as_ref()
            .and_then(|w| w.name_of(object))
            .or_else(|| self.lock_names.iter().find(|n| n.object == object))
            .map_or_else(|| format!("{object:#x}"), |n| n.name.clone())
    }

    /// A lock-state site's lock that the pthread hooks took has the lock list's name for it (its
    /// symbol, its init site, a runtime's private lock), once the objects are named.
    fn name_pthread_state_locks(&mut self) {
        let Some(states) = self.states.as_mut() else {
            return;
        };
        let names = self.waitfor.as_ref().map_or(&self.lock_names, |w| &w.names);
        for t in &mut states.threads {
            for site in &mut t.sites {
                for lock in site.locks.iter_mut().filter(|l| l.how == "pthread") {
                    if let Some(n) = names.iter().find(|n| n.object == lock.object) {
                        let kind = self
                            .summary
                            .locks
                            .iter()
                            .find(|l| l.address == lock.object)
                            .map_or("lock", |l| l.kind);
                        lock.name = if n.how == "runtime" {
                            n.name.clone()
                        } else {
                            format!("the pthread {kind} {}", n.name)
                        };
                    }
                }
            }
        }
    }
}
