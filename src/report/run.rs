//! The report of a run of several processes (issue 12 item 9): the process tree, the time and
//! findings per program, and the totals, above the launched process's own report. The files and
//! the tree come from `profile::tree`; this module only reads each profile and presents them.

use crate::analysis::Analysis;
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
    pub program: String,
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
}

fn program_name(command: &[String], exe: &str) -> String {
    let first = command.first().map(String::as_str).unwrap_or(exe);
    first.rsplit('/').next().unwrap_or(first).to_string()
}

impl RunReport {
    /// Reads every profile of the run; a damaged one is listed as unreadable, never fatal.
    pub fn load(files: RunFiles) -> RunReport {
        let mut images = Vec::new();
        let mut summaries = Vec::new();
        let mut unreadable = Vec::new();
        let mut root_image = None;
        for path in files.all() {
            match crate::profile::read(&path) {
                Ok(p) => {
                    if files.root.as_ref() == Some(&path) {
                        root_image = Some(images.len());
                    }
                    images.push(tree::Image::of(&path, &p));
                    summaries.push(summary::summarize(&p));
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
        for p in chosen {
            let mut found = Vec::new();
            for path in &processes[p].paths {
                if let Ok(a) = Analysis::read(path) {
                    found.extend(a.findings);
                }
            }
            processes[p].findings = Some(found);
        }
        RunReport {
            files,
            tree,
            processes,
            root,
            unreadable,
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
            // One line per process: a script passed with -c may hold newlines.
            let mut command: String = shell_words::join(&f.command)
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
                        "id": f.id, "severity": f.severity, "title": f.title,
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
            "unreadable": self.unreadable.iter().map(|(p, why)| json!({
                "path": p.display().to_string(), "error": why,
            })).collect::<Vec<_>>(),
        })
    }

    /// An HTML section with the tree and the programs, for the page of the launched process.
    pub fn html_section(&self) -> String {
        use crate::html::escape;
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
