//! OpenMP parallel regions (by outlined body) and the runs of them one thread started, with the
//! words of a TBB algorithm's frames.

/// One OpenMP parallel region (by its outlined body), summed over its runs.
#[derive(Debug, Clone, Default)]
pub struct OmpRegion {
    /// The outlined body's address (`main._omp_fn.0`, libgomp), or the region's call site in the
    /// user's code (`call_site`; LLVM's libomp, through OMPT: the return address of
    /// `__kmpc_fork_call` less one). Either symbolizes to the pragma's function and line.
    pub address: u64,
    /// `address` is a call site (profile kind `omp-region-site`): its innermost frame is the
    /// pragma's (a body's outermost frame is).
    pub call_site: bool,
    /// The addresses of the copies of the same pragma merged into this one (an unrolled loop's,
    /// or `address`'s own when it was not the lowest): runs name their region by any of them.
    pub merged: Vec<u64>,
    /// Its frame: the function and line of the pragma (None: not symbolized).
    pub frame: Option<crate::symbols::Frame>,
    /// Times the region ran.
    pub runs: u64,
    /// Team members, summed over the runs.
    pub members: u64,
    /// The regions' wall time, summed.
    pub wall_ns: u64,
    /// The team's time at the region's closing barrier: the members' wait for the slowest.
    pub barrier_ns: u64,
    /// The fork-join cost, summed over the runs: each run's wall time less its longest member's
    /// body (waking the team, handing out the work, joining it).
    pub fork_join_ns: u64,
}

impl OmpRegion {
    /// The members' time at the closing barrier as a share of the team's time in the region.
    pub fn barrier_share(&self) -> f64 {
        crate::util::ratio(self.barrier_ns as f64, self.team_ns())
    }

    /// The team's time in the region: members x wall.
    pub(super) fn team_ns(&self) -> f64 {
        self.wall_ns as f64 * self.team()
    }

    /// The part of the barrier wait that is uneven work: the members' wait for the longest
    /// body. The rest is every member waiting out the fork-join (a member woken late finishes
    /// late: the barrier wait of a tiny region is mostly that).
    pub fn imbalance_ns(&self) -> u64 {
        let fork_join_of_team = (self.fork_join_ns as f64 * self.team()) as u64;
        self.barrier_ns.saturating_sub(fork_join_of_team)
    }

    /// `imbalance_ns` as a share of the team's time in the region.
    pub fn imbalance_share(&self) -> f64 {
        crate::util::ratio(self.imbalance_ns() as f64, self.team_ns())
    }

    /// The average team size.
    pub fn team(&self) -> f64 {
        self.members as f64 / self.runs.max(1) as f64
    }

    /// `the parallel region in main at imbalanced_static.c:20` (the outlined body `main._omp_fn.0`
    /// named by the function that holds the pragma; a call site is in that function already; one
    /// in clang's outlined body of another region: `in an outer parallel region at x.c:13`), or
    /// its address.
    pub fn words(&self) -> String {
        match &self.frame {
            Some(f) => {
                let text = f.short_text();
                let text = match text.find("._omp_fn.") {
                    Some(i) => {
                        let rest = &text[i + "._omp_fn.".len()..];
                        let after = rest.trim_start_matches(|c: char| c.is_ascii_digit());
                        format!("{}{after}", &text[..i])
                    }
                    None => text,
                };
                // clang's outlined bodies (a region nested in another is called from one):
                // `.omp_outlined._debug__` (clang 14: no trace of its function) or
                // `main.omp_outlined` (later versions).
                let text = match (text.find(".omp_outlined"), text.find(" at ")) {
                    (Some(0), Some(at)) => format!("an outer parallel region{}", &text[at..]),
                    (Some(i), Some(at)) if i < at => format!("{}{}", &text[..i], &text[at..]),
                    _ => text,
                };
                format!("the parallel region in {text}")
            }
            None => format!("the parallel region at {:#x}", self.address),
        }
    }
}

/// Sums the regions that name the same pragma (function, file and line): a call site the compiler
/// copied (an unrolled or inlined caller) is one region, as its one outlined body would be.
pub fn merge_omp_regions(regions: &mut Vec<OmpRegion>) {
    let key = |r: &OmpRegion| {
        r.frame
            .as_ref()
            .filter(|f| f.function.is_some() && f.line.is_some())
            .map(|f| (f.function.clone(), f.file.clone(), f.line))
    };
    let mut merged: Vec<OmpRegion> = Vec::with_capacity(regions.len());
    for r in regions.drain(..) {
        let k = key(&r);
        match merged
            .iter_mut()
            .find(|m| k.is_some() && m.call_site == r.call_site && key(m) == k)
        {
            Some(m) => {
                m.merged.push(r.address);
                m.merged.extend(r.merged);
                m.address = m.address.min(r.address);
                m.runs = m.runs.saturating_add(r.runs);
                m.members = m.members.saturating_add(r.members);
                m.wall_ns = m.wall_ns.saturating_add(r.wall_ns);
                m.barrier_ns = m.barrier_ns.saturating_add(r.barrier_ns);
                m.fork_join_ns = m.fork_join_ns.saturating_add(r.fork_join_ns);
            }
            None => merged.push(r),
        }
    }
    *regions = merged;
}
/// Parallel regions one thread started, each within a millisecond of the last: one band on the
/// timeline (a band per region would be thousands for a loop of small regions).
#[derive(Debug, Clone, PartialEq)]
pub struct OmpRun {
    /// The thread that started them (the team's master).
    pub tid: u32,
    /// From the process's start.
    pub begin_ns: u64,
    pub end_ns: u64,
    /// The run's longest region: its index in `omp_regions` (None: not in the lock table).
    pub region: Option<usize>,
    /// The region's body address, when `region` is None; TBB: the caller's stack id.
    pub body: u64,
    /// A run of TBB algorithms (oneTBB's ITT notifications) rather than OpenMP regions.
    pub tbb: bool,
    /// TBB: `tbb::parallel_reduce in main at reduce.cpp:20`, from the caller's stack (filled by
    /// the analysis, which symbolizes).
    pub tbb_words: Option<String>,
    /// Regions in the run.
    pub regions: u32,
    /// The team's share of its time in the run at the regions' closing barriers.
    pub barrier_share: f64,
}

impl OmpRun {
    /// `the parallel region in main at loop.c:20` (its longest region's), or its address;
    /// `tbb::parallel_reduce in main at reduce.cpp:20` for TBB's algorithms.
    pub fn words(&self, regions: &[OmpRegion]) -> String {
        if self.tbb {
            return self
                .tbb_words
                .clone()
                .unwrap_or_else(|| "a TBB algorithm".to_string());
        }
        match self.region.and_then(|i| regions.get(i)) {
            Some(r) => r.words(),
            None => format!("the parallel region at {:#x}", self.body),
        }
    }

    /// The band's label: `main at loop.c:20 ×300, 35% at the barrier`.
    pub fn label(&self, regions: &[OmpRegion]) -> String {
        let words = self.words(regions);
        let place = words
            .strip_prefix("the parallel region in ")
            .unwrap_or(&words);
        let count = if self.regions > 1 {
            format!(" \u{d7}{}", crate::util::fmt_count(self.regions.into()))
        } else {
            String::new()
        };
        if self.tbb {
            return format!("{place}{count}");
        }
        format!(
            "{place}{count}, {} at the barrier",
            crate::util::fmt_pct(self.barrier_share)
        )
    }
}

/// A TBB algorithm named from its caller's stack: the algorithm by its template
/// (`tbb::detail::d1::parallel_reduce<...>`, inlined into the user's code, reads
/// `tbb::parallel_reduce`), the place by the user's frame: `tbb::parallel_reduce in main at
/// reduce.cpp:20`.
pub fn tbb_algorithm_words(frames: &[crate::symbols::Frame]) -> String {
    // The innermost `parallel_*` frame: the template the user called (inlined, its name may
    // lack the namespace: `parallel_reduce<tbb::detail::d1::blocked_range<long>, ...>`).
    let algorithm = frames
        .iter()
        .filter_map(|f| f.function.as_deref())
        .find_map(|name| {
            let bare = name
                .trim_start_matches("tbb::")
                .trim_start_matches("detail::")
                .trim_start_matches("d1::");
            let rest = bare.strip_prefix("parallel_")?;
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| format!("tbb::parallel_{}", &rest[..end]))
        })
        .unwrap_or_else(|| "a TBB algorithm".to_string());
    let user = crate::symbols::user_frame(frames);
    match frames
        .get(user)
        .filter(|f| !crate::symbols::is_runtime_frame(f) && f.function.is_some())
    {
        Some(f) => format!("{algorithm} in {}", f.short_text()),
        None => algorithm,
    }
}

/// The runs of parallel regions of `profile`, placed on the process's clock and named by the
/// region table (which must be in its final order).
pub fn omp_runs(profile: &crate::profile::Profile, regions: &[OmpRegion]) -> Vec<OmpRun> {
    let start = profile.process.start_mono_ns;
    let mut runs: Vec<OmpRun> = profile
        .region_runs
        .iter()
        .filter_map(|r| {
            let tid = profile.threads.iter().find(|t| t.serial == r.serial)?.tid;
            Some(OmpRun {
                tid,
                begin_ns: r.start_mono_ns.saturating_sub(start),
                end_ns: r.end_mono_ns.saturating_sub(start),
                region: regions
                    .iter()
                    .position(|g| !r.tbb && (g.address == r.body || g.merged.contains(&r.body))),
                body: r.body,
                tbb: r.tbb,
                tbb_words: None,
                regions: r.regions,
                barrier_share: r.barrier_share.min(1.0),
            })
        })
        .collect();
    runs.sort_by_key(|r| (r.begin_ns, r.tid));
    runs
}
