//! `threads` in the report's JSON: each thread's figures, states, sites, frames and functions.

use super::*;

#[derive(Serialize)]
pub(super) struct Thread<'a> {
    pub(super) tid: u32,
    pub(super) name: &'a str,
    /// Its label, as every view prints it (`ThreadId::label`).
    pub(super) label: String,
    pub(super) main: bool,
    pub(super) cpu_ns: u64,
    pub(super) wall_ns: u64,
    /// The allocator calls' summed durations (waits for a CPU or a lock inside them included).
    pub(super) alloc_ns: u64,
    /// The allocator's time on a CPU (at most `cpu_ns`): what its share of CPU time is taken of.
    pub(super) alloc_cpu_ns: u64,
    pub(super) alloc_calls: u64,
    pub(super) lock_wait_ns: u64,
    /// How many short threads this row stands for, when they were folded into one group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) folded_threads: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) states: Option<States>,
    /// How the thread's states were sampled: "signal" (its CPU timer's signal) or "kernel-clock"
    /// (it blocked the signal: its running time read from its kernel CPU clock, unclassified).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sampling: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) state_sites: Option<Named<Vec<StateSiteJson<'a>>>>,
    /// The kernel's figures for the thread (schedstat, stat), when the profile has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) kernel: Option<KernelJson>,
}

#[derive(Serialize)]
pub(super) struct KernelJson {
    pub(super) exec_ns: u64,
    pub(super) run_delay_ns: u64,
    pub(super) off_ns: u64,
    pub(super) minflt: u64,
    pub(super) majflt: u64,
    pub(super) stime_ns: u64,
    pub(super) switches: u64,
}

impl<'a> Thread<'a> {
    pub(super) fn of(t: &'a ThreadSummary, states: Option<&'a ThreadStates>) -> Thread<'a> {
        Thread {
            tid: t.tid,
            name: &t.name,
            label: ThreadId::of_summary(t).label(),
            main: t.main,
            cpu_ns: t.cpu_ns,
            wall_ns: t.wall_ns,
            alloc_ns: t.alloc_ns,
            alloc_cpu_ns: t.alloc_cpu_ns,
            alloc_calls: t.alloc_calls,
            lock_wait_ns: t.lock_wait_ns,
            folded_threads: t.folded,
            states: states.map(States::of),
            sampling: states.map(|st| {
                if st.signal_blocked {
                    "kernel-clock"
                } else {
                    "signal"
                }
            }),
            state_sites: states.map(|st| {
                Named(
                    SITE_CATEGORIES
                        .iter()
                        .map(|&c| {
                            let list = st
                                .listed_sites(c)
                                .map(|site| StateSiteJson::of(st, site))
                                .collect();
                            (c.key(), list)
                        })
                        .collect(),
                )
            }),
            kernel: states.and_then(|st| st.kernel).map(|k| KernelJson {
                exec_ns: k.exec_ns,
                run_delay_ns: k.run_delay_ns,
                off_ns: k.off_ns,
                minflt: k.minflt,
                majflt: k.majflt,
                stime_ns: k.stime_ns,
                switches: k.switches,
            }),
        }
    }
}

/// `threads[].states`: time per category (`<category>_ns`), the allocator's part from CPU samples
/// (`cpu_samples.allocator_ns`: on a CPU), what no sample stands for, samples.
pub(super) struct States {
    pub(super) ns: Vec<(String, u64)>,
    pub(super) allocator_on_cpu_ns: u64,
    pub(super) unaccounted_ns: u64,
    pub(super) samples: u64,
}

impl States {
    pub(super) fn of(t: &ThreadStates) -> States {
        States {
            ns: CATEGORIES
                .iter()
                .map(|c| (format!("{}_ns", c.key()), t.ns[c.index()]))
                .collect(),
            allocator_on_cpu_ns: t.allocator_on_cpu_ns,
            unaccounted_ns: t.unaccounted_ns(),
            samples: t.samples,
        }
    }
}

impl Serialize for States {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.ns.len() + 3))?;
        for (k, v) in &self.ns {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry(
            "cpu_samples",
            &std::collections::BTreeMap::from([("allocator_ns", self.allocator_on_cpu_ns)]),
        )?;
        map.serialize_entry("unaccounted_ns", &self.unaccounted_ns)?;
        map.serialize_entry("samples", &self.samples)?;
        map.end()
    }
}

#[derive(Serialize)]
pub(super) struct StateSiteJson<'a> {
    pub(super) share: f64,
    pub(super) samples: u64,
    pub(super) ns: u64,
    pub(super) function: String,
    pub(super) user_frame: Option<String>,
    pub(super) frames: Frames<'a>,
    /// Lock waits: the locks named by the futex words the samples caught, most first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) locks: Vec<WaitedLockJson<'a>>,
}

#[derive(Serialize)]
pub(super) struct WaitedLockJson<'a> {
    pub(super) name: &'a str,
    /// `symbol`, `allocator`, `stdio`, `init-site` or `address`.
    pub(super) named_by: &'a str,
    pub(super) address: String,
    pub(super) samples: u64,
    pub(super) ns: u64,
}

impl<'a> StateSiteJson<'a> {
    pub(super) fn of(t: &ThreadStates, site: &'a StateSite) -> StateSiteJson<'a> {
        StateSiteJson {
            share: t.site_share(site),
            samples: site.samples,
            ns: site.ns,
            function: site.function(),
            user_frame: site.user_frame().map(Frame::display),
            frames: Frames(&site.frames),
            locks: site
                .locks
                .iter()
                .map(|l| WaitedLockJson {
                    name: &l.name,
                    named_by: l.how,
                    address: format!("{:#x}", l.object),
                    samples: l.samples,
                    ns: l.ns,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
pub(super) struct Function {
    pub(super) calls: u64,
    pub(super) bytes: u64,
    pub(super) time_ns: u64,
    pub(super) timed_calls: u64,
    pub(super) mean_ns: f64,
    pub(super) p50_ns: Option<f64>,
    pub(super) p99_ns: Option<f64>,
}

impl Function {
    pub(super) fn of(f: &FnSummary) -> Function {
        Function {
            calls: f.calls,
            bytes: f.bytes,
            time_ns: f.time_ns,
            timed_calls: f.timed_calls,
            mean_ns: f.mean_ns(),
            p50_ns: f.quantile_ns(0.5),
            p99_ns: f.quantile_ns(0.99),
        }
    }
}
