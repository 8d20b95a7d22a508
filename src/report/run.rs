//! The report of a run of several processes (issue 12 item 9): the process tree, the time and
//! findings per program, and the totals, above the launched process's own report. The files and
//! the tree come from `profile::tree`; this module only reads each profile and presents them.

use crate::analysis::summary;
use crate::findings::Finding;
use crate::profile::tree::{self, RunFiles, Tree};
use crate::util::{Style, fmt_count, fmt_ns};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Findings are worked out for at most this many processes (the launched one and those with the
/// most CPU time): each needs the full analysis of its profile, symbols included.
const FINDINGS_FOR_AT_MOST: usize = 30;
/// ... and only for those with at least this share of the run's CPU time (the launched process
/// always).
const FINDINGS_MIN_CPU_SHARE: f64 = 0.01;
/// Lines of the tree shown in the terminal report (the JSON has every process).
const TREE_LINES: usize = 60;

/// What the run's report shows of one process (all its images together).
#[derive(Debug, Clone)]
pub struct ProcessFigures {
    pub command: Vec<String>,
    /// The executable's base name: programs are grouped by it.
    pub program: String,
    /// The executable and its main argument (`rustc X`), see `process_name`.
    pub name: String,
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
    /// Time on a CPU over time: (begin, end, CPU ns) in wall-clock ns since the epoch.
    pub cpu_spans: Vec<(u64, u64, u64)>,
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

/// The time on a CPU of a profile's threads, from its SCHED points (each covers the time since
/// its thread's previous point); CPU time no point covers (a process too short for the sampler)
/// is spread over the image's life.
fn cpu_spans(p: &crate::profile::Profile, cpu_ns: u64) -> Vec<(u64, u64, u64)> {
    let start_mono = p.process.start_mono_ns;
    let start_real = p.process.start_realtime_ns;
    let real = |mono: u64| start_real.saturating_add(mono.saturating_sub(start_mono));
    let mut last: std::collections::HashMap<u32, u64> = p
        .threads
        .iter()
        .map(|t| (t.serial, t.start_mono_ns.max(start_mono)))
        .collect();
    let mut out = Vec::new();
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
    out
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
    // Bins of at least 10 ms (the sampler looks every few ms), at most 2000 of them.
    let bin_ns = 10_000_000u64.max(wall.div_ceil(2000));
    let nbins = wall.div_ceil(bin_ns) as usize;
    let mut bins = vec![0f64; nbins];
    for p in processes {
        for &(b, e, v) in &p.cpu_spans {
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
    }
    // The last bin may be short: its figure is over its own length.
    let last_len = wall - (nbins as u64 - 1) * bin_ns;
    if let Some(last) = bins.last_mut() {
        *last *= bin_ns as f64 / last_len.max(1) as f64;
    }
    for b in bins.iter_mut() {
        *b = b.min(cpus as f64);
    }
    if cpus > 1 {
        let mut best: Option<(usize, usize)> = None;
        let mut i = 0;
        while i < nbins {
            if bins[i] >= SERIAL_ABOVE && bins[i] < SERIAL_BELOW {
                let from = i;
                while i < nbins && bins[i] >= SERIAL_ABOVE && bins[i] < SERIAL_BELOW {
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

/// The CPU time of `spans` within [begin, end), each span's time taken as even over it.
fn cpu_within(spans: &[(u64, u64, u64)], begin: u64, end: u64) -> f64 {
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

pub struct RunReport {
    pub files: RunFiles,
    pub tree: Tree,
    /// By process index of the tree.
    pub processes: Vec<ProcessFigures>,
    /// The launched process's index in the tree, when its profile is known.
    pub root: Option<usize>,
    /// Files that could not be read, and why.
    pub unreadable: Vec<(PathBuf, String)>,
    pub concurrency: RunConcurrency,
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

impl RunReport {
    /// Reads every profile of the run; a damaged one is listed as unreadable, never fatal.
    pub fn load(files: RunFiles) -> RunReport {
        let mut images = Vec::new();
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
                    spans.push(cpu_spans(&p, s.cpu_ns()));
                    summaries.push(s);
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
                ProcessFigures {
                    command: s.command.clone(),
                    program: program_name(&s.command, &s.exe),
                    name: process_name(&s.command, &s.exe),
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
                        .flat_map(|&i| spans[i].iter().copied())
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
        let cpus = summaries.iter().map(|s| s.ncpus).max().unwrap_or(1).max(1);
        let run_start = tree.images.iter().map(|i| i.start_ns).min().unwrap_or(0);
        let run_end = tree.images.iter().map(|i| i.end_ns).max().unwrap_or(0);
        let run_wall = run_end.saturating_sub(run_start);
        for p in chosen {
            let mut found = Vec::new();
            for path in &processes[p].paths {
                if let Ok(a) = crate::model::Model::read(path) {
                    found.extend(a.findings);
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
        let concurrency = run_concurrency(&processes, cpus, run_start, run_wall);
        RunReport {
            files,
            tree,
            processes,
            root,
            unreadable,
            concurrency,
        }
    }

    /// The profile a page of the run shows: the launched process's last image, else that of the
    /// process with the most CPU time.
    pub fn main_profile(&self) -> Option<PathBuf> {
        let p = self
            .root
            .or_else(|| (0..self.processes.len()).max_by_key(|&p| self.processes[p].cpu_ns))?;
        self.processes[p].paths.last().cloned()
    }

    fn total_cpu_ns(&self) -> u64 {
        self.processes.iter().map(|p| p.cpu_ns).sum()
    }

    /// From the first image's start to the last image's end.
    fn wall_ns(&self) -> u64 {
        let start = self.tree.images.iter().map(|i| i.start_ns).min();
        let end = self.tree.images.iter().map(|i| i.end_ns).max();
        match (start, end) {
            (Some(s), Some(e)) => e.saturating_sub(s),
            _ => 0,
        }
    }

    /// Programs by name: (name, process indices), the most CPU time first.
    fn programs(&self) -> Vec<(String, Vec<usize>)> {
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

    /// The findings of a program's processes: (id, title, processes that have it).
    fn program_findings(&self, members: &[usize]) -> Vec<(String, String, usize)> {
        findings_by_process(
            members
                .iter()
                .map(|&p| self.processes[p].findings.as_deref().unwrap_or_default()),
        )
    }

    fn ending(p: &ProcessFigures) -> String {
        match (p.exit_code, p.signal) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), None) => format!("exit {code}"),
            (None, None) if !p.complete => "partial".into(),
            (None, None) => "ended".into(),
        }
    }

    /// The terminal text: totals, the tree, and the table and findings by program.
    pub fn render_text(&self, style: Style) -> String {
        let mut o = String::new();
        let where_ = self
            .files
            .root
            .as_ref()
            .or(self.files.dir.as_ref())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let programs = self.programs();
        let _ = writeln!(
            o,
            "{} {where_}\n  {} processes of {} programs   wall {}   CPU {}   allocator calls {}   lock wait {}",
            style.bold("stallscope run"),
            self.processes.len(),
            programs.len(),
            fmt_ns(self.wall_ns() as f64),
            fmt_ns(self.total_cpu_ns() as f64),
            fmt_count(self.processes.iter().map(|p| p.alloc_calls).sum()),
            fmt_ns(self.processes.iter().map(|p| p.lock_wait_ns).sum::<u64>() as f64),
        );
        let c = &self.concurrency;
        if self.wall_ns() > 0 {
            let _ = write!(
                o,
                "  the run kept {:.1} of {} CPUs busy",
                c.mean_busy.min(c.cpus as f64),
                c.cpus
            );
            match &c.serial {
                Some(st) => {
                    let who = st.process.map_or("no process".to_string(), |p| {
                        format!(
                            "{} (pid {}, {:.0}% of its CPU time)",
                            self.processes[p].name,
                            self.tree.processes[p].pid,
                            st.share * 100.0
                        )
                    });
                    let _ = writeln!(
                        o,
                        "; the longest serial stretch: {} at {} ({:.1} CPUs busy): {who}",
                        fmt_ns((st.end_ns - st.begin_ns) as f64),
                        fmt_ns(st.begin_ns as f64),
                        st.mean_busy
                    );
                }
                None => {
                    let _ = writeln!(o);
                }
            }
        }
        for (path, why) in &self.unreadable {
            let _ = writeln!(
                o,
                "  {} {}: {why}",
                style.warn("unreadable"),
                path.display()
            );
        }
        let _ = writeln!(o, "\n{}", style.bold("Process tree"));
        let walk = self.tree.walk();
        for &(p, depth) in walk.iter().take(TREE_LINES) {
            let f = &self.processes[p];
            let proc_ = &self.tree.processes[p];
            // One line per process: a script passed with -c may hold newlines. The name, not
            // the command: a toolchain's path cut at 60 characters says nothing.
            let mut command: String = f
                .name
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            if command.chars().count() > 60 {
                command = command.chars().take(57).collect::<String>() + "...";
            }
            let execs = if proc_.images.len() > 1 {
                format!(" ({} images)", proc_.images.len())
            } else {
                String::new()
            };
            let adopted = if proc_.adopted { " (re-parented)" } else { "" };
            let _ = writeln!(
                o,
                "  {}{:>7} {command}{execs}{adopted}   wall {}  CPU {}  {}",
                "  ".repeat(depth),
                proc_.pid,
                fmt_ns(f.wall_ns as f64),
                fmt_ns(f.cpu_ns as f64),
                Self::ending(f)
            );
        }
        if walk.len() > TREE_LINES {
            let _ = writeln!(o, "  ... and {} more processes", walk.len() - TREE_LINES);
        }
        let _ = writeln!(o, "\n{}", style.bold("By program"));
        let _ = writeln!(
            o,
            "  {:<20} {:>9} {:>11} {:>11} {:>15} {:>11}",
            "program", "processes", "wall (sum)", "CPU", "allocator calls", "lock wait"
        );
        for (name, members) in &programs {
            let sum = |f: &dyn Fn(&ProcessFigures) -> u64| -> u64 {
                members.iter().map(|&p| f(&self.processes[p])).sum()
            };
            let _ = writeln!(
                o,
                "  {:<20} {:>9} {:>11} {:>11} {:>15} {:>11}",
                name,
                members.len(),
                fmt_ns(sum(&|p| p.wall_ns) as f64),
                fmt_ns(sum(&|p| p.cpu_ns) as f64),
                fmt_count(sum(&|p| p.alloc_calls)),
                fmt_ns(sum(&|p| p.lock_wait_ns) as f64),
            );
        }
        let analysed = self
            .processes
            .iter()
            .filter(|p| p.findings.is_some())
            .count();
        let _ = writeln!(
            o,
            "\n{} {}",
            style.bold("Findings by program"),
            style.dim(&format!(
                "(worked out for {analysed} of {} processes: the launched one and those with the most CPU time)",
                self.processes.len()
            ))
        );
        let mut any = false;
        for (name, members) in &programs {
            for (id, title, count) in self.program_findings(members) {
                any = true;
                let _ = writeln!(
                    o,
                    "  {name} ({count} of {} processes): {title} [{id}]",
                    members.len()
                );
            }
        }
        if !any {
            let _ = writeln!(o, "  none");
        }
        o
    }

    /// The run as JSON: every process with its place in the tree, the programs and the totals.
    pub fn json(&self) -> Value {
        let depth: BTreeMap<usize, usize> = self.tree.walk().into_iter().collect();
        let processes: Vec<Value> = self
            .processes
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let proc_ = &self.tree.processes[i];
                json!({
                    "index": i,
                    "pid": proc_.pid,
                    "ppid": proc_.ppid,
                    "parent": proc_.parent,
                    "depth": depth.get(&i),
                    "adopted": proc_.adopted,
                    "children": proc_.children,
                    "program": f.program,
                    "name": f.name,
                    "command": f.command,
                    "profiles": f.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                    "wall_ns": f.wall_ns,
                    "cpu_ns": f.cpu_ns,
                    "alloc_calls": f.alloc_calls,
                    "lock_wait_ns": f.lock_wait_ns,
                    "exit_code": f.exit_code,
                    "signal": f.signal,
                    "complete": f.complete,
                    "findings": f.findings.as_ref().map(|fs| fs.iter().map(|f| json!({
                        "id": f.id, "severity": f.severity, "title": f.title, "stake_ns": f.stake_ns,
                    })).collect::<Vec<_>>()),
                })
            })
            .collect();
        let programs: Vec<Value> = self
            .programs()
            .iter()
            .map(|(name, members)| {
                let sum = |f: &dyn Fn(&ProcessFigures) -> u64| -> u64 {
                    members.iter().map(|&p| f(&self.processes[p])).sum()
                };
                json!({
                    "program": name,
                    "processes": members,
                    "wall_ns": sum(&|p| p.wall_ns),
                    "cpu_ns": sum(&|p| p.cpu_ns),
                    "alloc_calls": sum(&|p| p.alloc_calls),
                    "lock_wait_ns": sum(&|p| p.lock_wait_ns),
                    "findings": self.program_findings(members).into_iter().map(|(id, title, n)| json!({
                        "id": id, "title": title, "processes": n,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "root": self.files.root.as_ref().map(|p| p.display().to_string()),
            "directory": self.files.dir.as_ref().map(|p| p.display().to_string()),
            "launched": self.root,
            "roots": self.tree.roots,
            "processes": processes,
            "programs": programs,
            "totals": {
                "processes": self.processes.len(),
                "programs": self.programs().len(),
                "wall_ns": self.wall_ns(),
                "cpu_ns": self.total_cpu_ns(),
                "alloc_calls": self.processes.iter().map(|p| p.alloc_calls).sum::<u64>(),
                "lock_wait_ns": self.processes.iter().map(|p| p.lock_wait_ns).sum::<u64>(),
            },
            "concurrency": {
                "cpus": self.concurrency.cpus,
                "mean_busy_cpus": self.concurrency.mean_busy.min(self.concurrency.cpus as f64),
                "bin_ns": self.concurrency.bin_ns,
                "busy_cpus": self.concurrency.bins,
                "longest_serial": self.concurrency.serial.as_ref().map(|st| json!({
                    "begin_ns": st.begin_ns,
                    "end_ns": st.end_ns,
                    "mean_busy_cpus": st.mean_busy,
                    "process": st.process,
                    "name": st.process.map(|p| self.processes[p].name.clone()),
                    "share": st.share,
                })),
            },
            "unreadable": self.unreadable.iter().map(|(p, why)| json!({
                "path": p.display().to_string(), "error": why,
            })).collect::<Vec<_>>(),
        })
    }

    /// An HTML section with the tree and the programs, for the page of the launched process.
    pub fn html_section(&self) -> String {
        use crate::util::escape;
        let mut o = String::from("<h2 id=\"run\">Processes of this run</h2>");
        let _ = write!(
            o,
            "<p>{} processes of {} programs · wall {} · CPU {}</p><table><thead><tr><th>pid</th><th>command</th><th>wall</th><th>CPU</th><th>allocator calls</th><th>ended</th></tr></thead><tbody>",
            self.processes.len(),
            self.programs().len(),
            fmt_ns(self.wall_ns() as f64),
            fmt_ns(self.total_cpu_ns() as f64)
        );
        for (p, depth) in self.tree.walk() {
            let f = &self.processes[p];
            let _ = write!(
                o,
                "<tr><td>{}</td><td style=\"padding-left:{}em\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                self.tree.processes[p].pid,
                depth,
                escape(&shell_words::join(&f.command)),
                fmt_ns(f.wall_ns as f64),
                fmt_ns(f.cpu_ns as f64),
                fmt_count(f.alloc_calls),
                escape(&Self::ending(f))
            );
        }
        o.push_str("</tbody></table>");
        let mut findings = String::new();
        for (name, members) in self.programs() {
            for (id, title, count) in self.program_findings(&members) {
                let _ = write!(
                    findings,
                    "<li><b>{}</b> ({count} of {} processes): {} <span class=\"muted\">[{}]</span></li>",
                    escape(&name),
                    members.len(),
                    escape(&title),
                    escape(&id)
                );
            }
        }
        if !findings.is_empty() {
            let _ = write!(o, "<h3>Findings by program</h3><ul>{findings}</ul>");
        }
        o
    }
}

/// The run named by `path`, when it is more than a single profile.
pub fn load(path: &Path) -> anyhow::Result<Option<RunReport>> {
    let files = tree::discover(path)?;
    if files.is_single() {
        return Ok(None);
    }
    Ok(Some(RunReport::load(files)))
}

/// Each rule's findings over a program's processes: (id, the first title, how many processes had
/// one). A process with several findings of one rule (two contended locks) counts once.
fn findings_by_process<'a>(
    processes: impl Iterator<Item = &'a [Finding]>,
) -> Vec<(String, String, usize)> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    for findings in processes {
        let mut seen: Vec<&str> = Vec::new();
        for f in findings {
            if seen.contains(&f.id.as_str()) {
                continue;
            }
            seen.push(&f.id);
            match out.iter_mut().find(|(id, _, _)| *id == f.id) {
                Some(entry) => entry.2 += 1,
                None => out.push((f.id.clone(), f.title.clone(), 1)),
            }
        }
    }
    out
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
        }
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
}
