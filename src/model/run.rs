//! The model of a run of several processes: the process tree, each process's
//! figures and findings, the CPUs the run kept busy over time, and the model of the profile a
//! page of the run shows. The files and the tree come from `profile::tree`; each profile is read
//! once, and analysed once where its findings (or its page) are needed. The views present it:
//! `report` as text and JSON, `html` as a section of the page.

use super::Model;
use crate::analysis::Options;
use crate::analysis::summary;
use crate::findings::Finding;
use crate::profile::tree::{self, RunFiles, Tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Findings are worked out for at most this many processes (the launched one and those with the
/// most CPU time): each needs the full analysis of its profile, symbols included.
const FINDINGS_FOR_AT_MOST: usize = 30;
/// ... and only for those with at least this share of the run's CPU time (the launched process
/// always).
const FINDINGS_MIN_CPU_SHARE: f64 = 0.01;
/// What the run's report shows of one process (all its images together).
#[derive(Debug, Clone)]
pub struct ProcessFigures {
    pub command: Vec<String>,
    /// The executable's base name: programs are grouped by it.
    pub program: String,
    /// The title the process gave itself (`postgres: checkpointer`), its words; empty where it
    /// kept its command line. `command` is the command line it started with.
    pub title: Vec<String>,
    /// The executable and its main argument (`rustc X`), see `process_name`; a process that
    /// gave itself a title, by its title.
    pub name: String,
    /// The command line it started with, named as `name` names a command (`postgres data`):
    /// where it has a title, what the tree shows beside it.
    pub started_as: String,
    pub paths: Vec<PathBuf>,
    pub wall_ns: u64,
    pub cpu_ns: u64,
    pub alloc_calls: u64,
    pub lock_wait_ns: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub complete: bool,
    /// None: not worked out (see FINDINGS_FOR_AT_MOST).
    pub findings: Option<Vec<Finding>>,
    /// Time on a CPU over time.
    pub cpu_spans: Spans,
    /// Time runnable, waiting for a CPU, over time.
    pub delay_spans: Spans,
}

/// The CPUs the run's processes kept busy over time, together.
#[derive(Debug, Clone, Default)]
pub struct RunConcurrency {
    pub cpus: u32,
    /// CPU time of all processes over the run's wall time.
    pub mean_busy: f64,
    pub bin_ns: u64,
    /// CPUs busy in each bin, from the run's start.
    pub bins: Vec<f64>,
    /// The longest stretch with fewer than `SERIAL_BELOW` CPUs busy while some process ran.
    pub serial: Option<SerialStretch>,
}

#[derive(Debug, Clone)]
pub struct SerialStretch {
    /// From the run's start.
    pub begin_ns: u64,
    pub end_ns: u64,
    pub mean_busy: f64,
    /// The process with the most CPU time in it, and its share of the stretch's CPU time.
    pub process: Option<usize>,
    pub share: f64,
}

/// A stretch is serial while fewer CPUs than this were busy (a machine of one CPU has none).
const SERIAL_BELOW: f64 = 1.5;
/// ... and at least this many, so that a wait with nothing running (a download) is no stretch.
const SERIAL_ABOVE: f64 = 0.5;
/// A process's finding is shown only if its stake is at least this share of the run's wall time.
const FINDING_MIN_RUN_SHARE: f64 = 0.01;

/// Time over time: (begin, end, ns) in wall-clock ns since the epoch, the ns taken as even over
/// the span.
type Spans = Vec<(u64, u64, u64)>;

/// The time on a CPU of a profile's threads, and their time runnable, from its SCHED points (each
/// covers the time since its thread's previous point); CPU time no point covers (a process too
/// short for the sampler) is spread over the image's life.
fn sched_spans(p: &crate::profile::Profile, cpu_ns: u64) -> (Spans, Spans) {
    let start_mono = p.process.start_mono_ns;
    let start_real = p.process.start_realtime_ns;
    let real = |mono: u64| start_real.saturating_add(mono.saturating_sub(start_mono));
    let mut last: std::collections::HashMap<u32, u64> = p
        .threads
        .iter()
        .map(|t| (t.serial, t.start_mono_ns.max(start_mono)))
        .collect();
    let began = last.clone();
    let mut out = Vec::new();
    let mut delay = Vec::new();
    let mut covered = 0u64;
    for s in &p.sched {
        let Some(from) = last.get_mut(&s.serial) else {
            continue;
        };
        let begin = (*from).min(s.mono_ns);
        let exec = s.exec_ns.min(s.mono_ns - begin);
        if exec > 0 {
            out.push((real(begin), real(s.mono_ns), exec));
            covered += exec;
        }
        // The kernel adds a wait to the run delay when the wait ends: a thread still waiting at
        // one look reports that wait at a later one, maybe more than the time since: its span
        // reaches back as far as it must (to the thread's start at most), so no wait is lost.
        let runnable = s.run_delay_ns;
        if runnable > 0 {
            let from = if runnable <= s.mono_ns - begin - exec {
                begin
            } else {
                let start = began.get(&s.serial).copied().unwrap_or(begin);
                s.mono_ns
                    .saturating_sub(exec + runnable)
                    .max(start)
                    .min(begin)
            };
            delay.push((real(from), real(s.mono_ns), runnable.min(s.mono_ns - from)));
        }
        *from = s.mono_ns;
    }
    let rest = cpu_ns.saturating_sub(covered);
    if rest > 0 {
        out.push((
            start_real,
            start_real.saturating_add(p.wall_ns().max(1)),
            rest,
        ));
    }
    (out, delay)
}

/// CPUs busy over the run, from every process's time on a CPU, and its longest serial stretch.
fn run_concurrency(
    processes: &[ProcessFigures],
    cpus: u32,
    start: u64,
    wall: u64,
) -> RunConcurrency {
    let mut c = RunConcurrency {
        cpus,
        ..RunConcurrency::default()
    };
    if wall == 0 {
        return c;
    }
    let total: u64 = processes.iter().map(|p| p.cpu_ns).sum();
    c.mean_busy = total as f64 / wall as f64;
    let bin_ns = bin_ns_of(wall);
    let mut bins = binned(processes.iter().map(|p| &p.cpu_spans), start, wall, bin_ns);
    for b in bins.iter_mut() {
        *b = b.min(cpus as f64);
    }
    // Processes waiting for a CPU meanwhile: a bin with one CPU busy while others wanted one
    // (other load took the CPUs: cc1 processes of `make -j4` runnable 75% of the time) is not
    // serial.
    let runnable = binned(
        processes.iter().map(|p| &p.delay_spans),
        start,
        wall,
        bin_ns,
    );
    let serial = |i: usize| {
        bins[i] >= SERIAL_ABOVE && bins[i] < SERIAL_BELOW && bins[i] + runnable[i] < SERIAL_BELOW
    };
    let nbins = bins.len();
    if cpus > 1 {
        let mut best: Option<(usize, usize)> = None;
        let mut i = 0;
        while i < nbins {
            if serial(i) {
                let from = i;
                while i < nbins && serial(i) {
                    i += 1;
                }
                if best.is_none_or(|(f, t)| t - f < i - from) {
                    best = Some((from, i));
                }
            } else {
                i += 1;
            }
        }
        if let Some((f, t)) = best {
            let begin_ns = f as u64 * bin_ns;
            let end_ns = (t as u64 * bin_ns).min(wall);
            let within: Vec<f64> = processes
                .iter()
                .map(|p| cpu_within(&p.cpu_spans, start + begin_ns, start + end_ns))
                .collect();
            let all: f64 = within.iter().sum();
            let top = (0..processes.len()).max_by(|&a, &b| within[a].total_cmp(&within[b]));
            c.serial = Some(SerialStretch {
                begin_ns,
                end_ns,
                mean_busy: all / (end_ns - begin_ns).max(1) as f64,
                process: top.filter(|&p| within[p] > 0.0),
                share: top.map_or(0.0, |p| within[p] / all.max(1.0)),
            });
        }
    }
    c.bin_ns = bin_ns;
    c.bins = bins;
    c
}

/// Bins of at least 10 ms (the sampler looks every few ms), at most 2000 of them.
pub(super) fn bin_ns_of(wall: u64) -> u64 {
    10_000_000u64.max(wall.div_ceil(2000))
}

/// Spans of time (CPU time, run delay) in bins of `bin_ns` from `start`: each bin's time over its
/// length (the threads at it on average), each span's time taken as even over it.
pub(super) fn binned<'a>(
    spans: impl Iterator<Item = &'a Spans>,
    start: u64,
    wall: u64,
    bin_ns: u64,
) -> Vec<f64> {
    let nbins = wall.div_ceil(bin_ns) as usize;
    let mut bins = vec![0f64; nbins];
    for &(b, e, v) in spans.flatten() {
        let b = b.saturating_sub(start).min(wall);
        let e = e.saturating_sub(start).min(wall).max(b + 1);
        let span = (e - b) as f64;
        let mut t = b;
        while t < e {
            let i = (t / bin_ns) as usize;
            if i >= nbins {
                break;
            }
            let bin_end = ((i as u64 + 1) * bin_ns).min(e);
            bins[i] += v as f64 * (bin_end - t) as f64 / span / bin_ns as f64;
            t = bin_end;
        }
    }
    // The last bin may be short: its figure is over its own length.
    let last_len = wall - (nbins as u64).saturating_sub(1) * bin_ns;
    if let Some(last) = bins.last_mut() {
        *last *= bin_ns as f64 / last_len.max(1) as f64;
    }
    bins
}

/// The CPU time of `spans` within [begin, end), each span's time taken as even over it.
pub(super) fn cpu_within(spans: &[(u64, u64, u64)], begin: u64, end: u64) -> f64 {
    spans
        .iter()
        .map(|&(b, e, v)| {
            let lo = b.max(begin);
            let hi = e.min(end);
            if hi <= lo || e <= b {
                0.0
            } else {
                v as f64 * (hi - lo) as f64 / (e - b) as f64
            }
        })
        .sum()
}

/// A run of several processes, read.
pub struct Run {
    pub files: RunFiles,
    pub tree: Tree,
    /// By process index of the tree.
    pub processes: Vec<ProcessFigures>,
    /// The launched process's index in the tree, when its profile is known.
    pub root: Option<usize>,
    /// Files that could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
    pub concurrency: RunConcurrency,
    /// Findings of the process tree as a whole (`findings::run_tree`), also first among the
    /// page's model's findings.
    pub findings: Vec<Finding>,
    /// The model of the profile a page of the run shows: the launched profile, else (no
    /// launched profile known) the last image of the process with the most CPU time. None: it
    /// could not be read (it is in `unreadable`), or the run has no readable profile.
    pub main: Option<Model>,
}

fn program_name(command: &[String], exe: &str) -> String {
    let first = match command.first() {
        Some(a) if !a.is_empty() && !is_title(a) => a.as_str(),
        _ => exe,
    };
    let first = first.trim_end_matches('/');
    first.rsplit('/').next().unwrap_or(first).to_string()
}

/// argv[0] is no path to a program but words: a title the program gave itself (`postgres:
/// checkpointer`), as servers name their workers.
fn is_title(argv0: &str) -> bool {
    argv0.contains(": ") || (argv0.contains(' ') && !argv0.starts_with('/'))
}

/// Source files a compiler or an interpreter is named by.
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "c++", "C", "h", "hpp", "rs", "S", "s", "f", "f90", "go", "m", "mm",
    "py", "sh", "pl", "rb", "js", "java", "zig", "d", "swift",
];

/// What a process is called in the run: its executable and its main argument (`rustc
/// --crate-name X` gives `rustc X`, `cc1 ... f.c -o f.s` gives `cc1 f.c`, a script its path's
/// base name); a program that rewrote its title (`postgres: checkpointer`) by that title.
pub fn process_name(command: &[String], exe: &str) -> String {
    let program = program_name(command, exe);
    let Some(argv0) = command.first() else {
        return program;
    };
    if is_title(argv0) {
        let title: String = command
            .iter()
            .map(|a| a.trim())
            .filter(|a| !a.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        return title;
    }
    let args = &command[1..];
    // A path by its last component (`/`: itself); words (a shell's -c script) as they are.
    let base = |a: &str| {
        if a.contains(char::is_whitespace) {
            return a.to_string();
        }
        let b = a.trim_end_matches('/').rsplit('/').next().unwrap_or(a);
        if b.is_empty() { a } else { b }.to_string()
    };
    let main = args
        .windows(2)
        .find(|w| w[0] == "--crate-name")
        .map(|w| w[1].clone())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--crate-name=").map(str::to_string))
        })
        .or_else(|| {
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .find(|a| {
                    a.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty() && SOURCE_EXTENSIONS.contains(&ext)
                    })
                })
                .map(|a| base(a))
        })
        // A linker or a compiler without a source file: what it writes.
        .or_else(|| {
            args.windows(2)
                .find(|w| w[0] == "-o" && !w[1].is_empty())
                .map(|w| base(&w[1]))
        })
        .or_else(|| {
            args.iter()
                .find(|a| !a.is_empty() && !a.starts_with('-'))
                .map(|a| base(a))
        });
    match main {
        Some(m) if !m.is_empty() => {
            let m: String = m
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            let m = if m.chars().count() > 40 {
                m.chars().take(37).collect::<String>() + "..."
            } else {
                m
            };
            format!("{program} {m}")
        }
        _ => program,
    }
}

impl Run {
    /// Reads every profile of the run once; a damaged one is listed as unreadable, never fatal.
    /// The profiles of the processes whose findings are worked out (and of the page's profile)
    /// are analysed once, from the profile already read.
    pub fn load(files: RunFiles) -> Run {
        let mut images = Vec::new();
        let mut profiles = Vec::new();
        let mut summaries = Vec::new();
        let mut unreadable = Vec::new();
        let mut root_image = None;
        let mut spans = Vec::new();
        for path in files.all() {
            match crate::profile::read(&path) {
                Ok(p) => {
                    if files.root.as_ref() == Some(&path) {
                        root_image = Some(images.len());
                    }
                    images.push(tree::Image::of(&path, &p));
                    let s = summary::summarize(&p);
                    spans.push(sched_spans(&p, s.cpu_ns()));
                    summaries.push(s);
                    profiles.push(Some(p));
                }
                Err(e) => unreadable.push((path, format!("{e:#}"))),
            }
        }
        let tree = tree::build(images, root_image);
        let root = root_image.and_then(|i| tree.process_of_image(i));
        let mut processes: Vec<ProcessFigures> = tree
            .processes
            .iter()
            .map(|proc_| {
                let last = *proc_.images.last().expect("a process has an image");
                let first = proc_.images[0];
                let s = &summaries[last];
                let title = profiles[last]
                    .as_ref()
                    .map(|p| p.title.clone())
                    .unwrap_or_default();
                let started_as = process_name(&s.command, &s.exe);
                ProcessFigures {
                    command: s.command.clone(),
                    program: program_name(&s.command, &s.exe),
                    name: if title.is_empty() {
                        started_as.clone()
                    } else {
                        process_name(&title, &s.exe)
                    },
                    title,
                    started_as,
                    paths: proc_
                        .images
                        .iter()
                        .map(|&i| tree.images[i].path.clone())
                        .collect(),
                    wall_ns: tree.images[last]
                        .end_ns
                        .saturating_sub(tree.images[first].start_ns),
                    cpu_ns: proc_.images.iter().map(|&i| summaries[i].cpu_ns()).sum(),
                    alloc_calls: proc_
                        .images
                        .iter()
                        .map(|&i| summaries[i].alloc_calls())
                        .sum(),
                    lock_wait_ns: proc_
                        .images
                        .iter()
                        .map(|&i| summaries[i].lock_wait_ns())
                        .sum(),
                    exit_code: s.exit_code,
                    signal: s.signal,
                    complete: s.complete || s.exit_code.is_some() || s.signal.is_some(),
                    findings: None,
                    cpu_spans: proc_
                        .images
                        .iter()
                        .flat_map(|&i| spans[i].0.iter().copied())
                        .collect(),
                    delay_spans: proc_
                        .images
                        .iter()
                        .flat_map(|&i| spans[i].1.iter().copied())
                        .collect(),
                }
            })
            .collect();
        let total_cpu: u64 = processes.iter().map(|p| p.cpu_ns).sum();
        let mut by_cpu: Vec<usize> = (0..processes.len()).collect();
        by_cpu.sort_by_key(|&p| std::cmp::Reverse(processes[p].cpu_ns));
        let chosen: Vec<usize> = root
            .into_iter()
            .chain(by_cpu.into_iter().filter(|&p| {
                Some(p) != root
                    && processes[p].cpu_ns as f64 >= FINDINGS_MIN_CPU_SHARE * total_cpu as f64
            }))
            .take(FINDINGS_FOR_AT_MOST)
            .collect();
        // The page's profile: the launched one (none if it could not be read), else the
        // busiest process's last image.
        let main_image = if files.root.is_some() {
            root_image
        } else {
            (0..processes.len())
                .max_by_key(|&p| processes[p].cpu_ns)
                .and_then(|p| tree.processes[p].images.last().copied())
        };
        // Only the profiles analysed below stay in memory.
        for (i, profile) in profiles.iter_mut().enumerate() {
            let wanted = Some(i) == main_image
                || tree
                    .process_of_image(i)
                    .is_some_and(|p| chosen.contains(&p));
            if !wanted {
                *profile = None;
            }
        }
        let mut analyse = |i: usize| -> Option<Model> {
            let profile = profiles.get_mut(i)?.take()?;
            let path = tree.images[i].path.display().to_string();
            Some(Model::of(profile, path, Options::default()))
        };
        let cpus = summaries.iter().map(|s| s.ncpus).max().unwrap_or(1).max(1);
        let run_start = tree.images.iter().map(|i| i.start_ns).min().unwrap_or(0);
        let run_end = tree.images.iter().map(|i| i.end_ns).max().unwrap_or(0);
        let run_wall = run_end.saturating_sub(run_start);
        let mut main = None;
        for p in chosen {
            let mut found = Vec::new();
            for &i in &tree.processes[p].images {
                if let Some(model) = analyse(i) {
                    found.extend(model.findings.iter().cloned());
                    if Some(i) == main_image {
                        main = Some(model);
                    }
                }
            }
            // A process's finding whose stake is too small for the run as a whole (a 9 ms
            // allocator share of a 12 s build) is no finding of the run; the launched process
            // keeps all of its own.
            if Some(p) != root {
                found.retain(|f| {
                    f.stake_ns
                        .is_none_or(|s| s as f64 >= FINDING_MIN_RUN_SHARE * run_wall as f64)
                });
            }
            processes[p].findings = Some(found);
        }
        if main.is_none() {
            main = main_image.and_then(&mut analyse);
        }
        let concurrency = run_concurrency(&processes, cpus, run_start, run_wall);
        // The tree's own findings lead the page's model's: the run's cause before a process's.
        let main_process = main_image.and_then(|i| tree.process_of_image(i));
        let findings = super::run_cpus::tree_findings(
            &mut processes,
            main_process.zip(main.as_mut().map(|m| &mut m.findings)),
            cpus,
            run_start,
            run_wall,
        );
        if let Some(m) = main.as_mut() {
            m.findings.splice(0..0, findings.iter().cloned());
        }
        Run {
            findings,
            files,
            tree,
            processes,
            root,
            unreadable,
            concurrency,
            main,
        }
    }

    /// The model of the launched process's profile (None without one). Its profile could not
    /// be read: the error `report` and `html` give for it.
    pub fn launched(&self) -> anyhow::Result<Option<&Model>> {
        let Some(root) = &self.files.root else {
            return Ok(None);
        };
        match &self.main {
            Some(m) => Ok(Some(m)),
            None => {
                let why = self
                    .unreadable
                    .iter()
                    .find(|(p, _)| p == root)
                    .map_or("no profile", |(_, why)| why.as_str());
                anyhow::bail!("{why}")
            }
        }
    }

    pub fn total_cpu_ns(&self) -> u64 {
        self.processes.iter().map(|p| p.cpu_ns).sum()
    }

    /// From the first image's start to the last image's end.
    pub fn wall_ns(&self) -> u64 {
        let start = self.tree.images.iter().map(|i| i.start_ns).min();
        let end = self.tree.images.iter().map(|i| i.end_ns).max();
        match (start, end) {
            (Some(s), Some(e)) => e.saturating_sub(s),
            _ => 0,
        }
    }

    /// Programs by name: (name, process indices), the most CPU time first.
    pub fn programs(&self) -> Vec<(String, Vec<usize>)> {
        let mut map: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, p) in self.processes.iter().enumerate() {
            map.entry(p.program.clone()).or_default().push(i);
        }
        let mut out: Vec<(String, Vec<usize>)> = map.into_iter().collect();
        out.sort_by_key(|(_, ps)| {
            std::cmp::Reverse(ps.iter().map(|&p| self.processes[p].cpu_ns).sum::<u64>())
        });
        out
    }

    /// The findings of a program's analysed processes: (id, title, processes that have it).
    pub fn program_findings(&self, members: &[usize]) -> Vec<(String, String, usize)> {
        findings_by_process(
            members
                .iter()
                .filter_map(|&p| self.processes[p].findings.as_deref()),
        )
    }

    pub fn ending(p: &ProcessFigures) -> String {
        match (p.exit_code, p.signal) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), None) => format!("exit {code}"),
            (None, None) if !p.complete => "partial".into(),
            (None, None) => "ended".into(),
        }
    }
}

/// The run named by `path`, when it is more than a single profile.
pub fn load(path: &Path) -> anyhow::Result<Option<Run>> {
    let files = tree::discover(path)?;
    if files.is_single() {
        return Ok(None);
    }
    Ok(Some(Run::load(files)))
}

/// Each rule's findings over a program's processes: (id, the first title, how many processes had
/// one). A process with several findings of one rule (two contended locks) counts once, as sure
/// if any of them is. A rule whose findings are all uncertain (their level reached only by an estimate
/// from few CPU samples) is left out unless at least half the processes have it: of many like
/// processes one reaches a level by chance (make -j2's 16 cc1, beside other load: one at "12.3%
/// of the threads' CPU time in the allocator, possibly as little as 0.0%").
fn findings_by_process<'a>(
    processes: impl Iterator<Item = &'a [Finding]>,
) -> Vec<(String, String, usize)> {
    // (id, title, processes, processes where it was sure)
    let mut out: Vec<(String, String, usize, usize)> = Vec::new();
    let mut analysed = 0;
    for findings in processes {
        analysed += 1;
        let mut seen: Vec<&str> = Vec::new();
        for f in findings {
            if seen.contains(&f.id.as_str()) {
                continue;
            }
            seen.push(&f.id);
            let sure = findings.iter().any(|g| g.id == f.id && !g.uncertain);
            match out.iter_mut().find(|x| x.0 == f.id) {
                Some(entry) => {
                    entry.2 += 1;
                    entry.3 += usize::from(sure);
                }
                None => out.push((f.id.clone(), f.title.clone(), 1, usize::from(sure))),
            }
        }
    }
    out.into_iter()
        .filter(|x| x.3 > 0 || 2 * x.2 >= analysed)
        .map(|(id, title, count, _)| (id, title, count))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;

    fn finding(id: &str, title: &str) -> Finding {
        Finding {
            id: id.into(),
            severity: Severity::High,
            title: title.into(),
            evidence: Vec::new(),
            cause: String::new(),
            remedy: String::new(),
            stake_ns: None,
            uncertain: false,
            about: Vec::new(),
        }
    }

    /// A process with `cpu` ns on a CPU and `runnable` ns waiting for one, each spread evenly
    /// over [0, 1 s).
    fn busy_process(cpu: u64, runnable: u64) -> ProcessFigures {
        let spans = |ns: u64| {
            if ns > 0 {
                vec![(0, 1_000_000_000, ns)]
            } else {
                Vec::new()
            }
        };
        ProcessFigures {
            command: words(&["cc1"]),
            program: "cc1".into(),
            title: Vec::new(),
            name: "cc1".into(),
            started_as: "cc1".into(),
            paths: Vec::new(),
            wall_ns: 1_000_000_000,
            cpu_ns: cpu,
            alloc_calls: 0,
            lock_wait_ns: 0,
            exit_code: Some(0),
            signal: None,
            complete: true,
            findings: None,
            cpu_spans: spans(cpu),
            delay_spans: spans(runnable),
        }
    }

    #[test]
    fn one_cpu_busy_while_others_wait_for_one_is_not_a_serial_stretch() {
        // Two compilers on 2 CPUs, each on a CPU half the time and runnable the other half: one
        // CPU's worth busy, the other taken by other load. Read by busy CPUs alone, a serial
        // stretch of the whole run.
        let contended = [
            busy_process(500_000_000, 500_000_000),
            busy_process(500_000_000, 500_000_000),
        ];
        let c = run_concurrency(&contended, 2, 0, 1_000_000_000);
        assert!((c.mean_busy - 1.0).abs() < 1e-9, "{}", c.mean_busy);
        assert!(c.serial.is_none(), "{:?}", c.serial);
        // One process alone on a CPU, now and then runnable: serial it is.
        let alone = [busy_process(900_000_000, 100_000_000)];
        let c = run_concurrency(&alone, 2, 0, 1_000_000_000);
        let s = c.serial.expect("a serial stretch");
        assert_eq!((s.begin_ns, s.end_ns), (0, 1_000_000_000));
        assert_eq!(s.process, Some(0));
    }

    fn words(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_process_is_named_by_its_program_and_main_argument() {
        let rustc = words(&[
            "/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc",
            "--crate-name",
            "serde_json",
            "--edition=2021",
            "src/lib.rs",
        ]);
        assert_eq!(process_name(&rustc, "/x/rustc"), "rustc serde_json");
        let cc1 = words(&[
            "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
            "-quiet",
            "-I",
            "inc",
            "src/f.c",
            "-o",
            "/tmp/cc.s",
        ]);
        assert_eq!(process_name(&cc1, ""), "cc1 f.c");
        assert_eq!(process_name(&words(&["ls", "/"]), "/usr/bin/ls"), "ls /");
        assert_eq!(
            process_name(&words(&["make", "-j2"]), "/usr/bin/make"),
            "make"
        );
        assert_eq!(process_name(&[], "/usr/bin/true"), "true");
        // A title the program gave itself, as PostgreSQL's backends do.
        let title = words(&["postgres: checkpointer   ", ""]);
        assert_eq!(
            process_name(&title, "/usr/lib/postgresql/15/bin/postgres"),
            "postgres: checkpointer"
        );
        assert_eq!(
            program_name(&title, "/usr/lib/postgresql/15/bin/postgres"),
            "postgres"
        );
    }

    #[test]
    fn a_rule_counts_processes_not_findings() {
        let one = vec![
            finding("lock-contention", "lock A"),
            finding("lock-contention", "lock B"),
            finding("small-allocations", "small"),
        ];
        let two = vec![finding("lock-contention", "lock C")];
        let by = findings_by_process([one.as_slice(), two.as_slice(), &[]].into_iter());
        assert_eq!(
            by,
            [
                ("lock-contention".into(), "lock A".into(), 2),
                ("small-allocations".into(), "small".into(), 1),
            ]
        );
        let alone = findings_by_process([one.as_slice()].into_iter());
        assert!(alone.iter().all(|(_, _, n)| *n == 1), "{alone:?}");
    }

    /// An uncertain finding (a level reached only by an estimate from few CPU samples) in one of
    /// many like processes is chance: make -j2's 16 cc1 beside other load, one with the allocator
    /// at 12.3% of its CPU time "possibly as little as 0.0%".
    #[test]
    fn a_program_shows_an_uncertain_finding_only_where_half_its_processes_have_it() {
        let uncertain = |id: &str| Finding {
            uncertain: true,
            ..finding(id, id)
        };
        let none: Vec<Finding> = Vec::new();
        let one = vec![uncertain("allocator-time")];
        let ids = |processes: Vec<&[Finding]>| -> Vec<(String, usize)> {
            findings_by_process(processes.into_iter())
                .into_iter()
                .map(|(id, _, n)| (id, n))
                .collect()
        };
        let mut cc1: Vec<&[Finding]> = vec![&none; 15];
        cc1.push(&one);
        assert!(ids(cc1).is_empty());
        // Alone, or in half the processes: shown.
        assert_eq!(ids(vec![&one]), [("allocator-time".into(), 1)]);
        assert_eq!(ids(vec![&one, &none]), [("allocator-time".into(), 1)]);
        // A sure one in any process shows the rule, counting the uncertain ones too.
        let sure = vec![finding("allocator-time", "sure")];
        let mut mixed: Vec<&[Finding]> = vec![&none; 14];
        mixed.push(&one);
        mixed.push(&sure);
        assert_eq!(ids(mixed), [("allocator-time".into(), 2)]);
    }
}
