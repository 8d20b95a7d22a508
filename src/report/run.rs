//! The report of a run of several processes: the process tree, the time and
//! findings per program, and the totals, above the launched process's own report, as text and
//! as JSON. The run's model (the tree, each process's figures and findings, the run's
//! concurrency) is `crate::model::run`; this module only presents it.

use crate::findings::Severity;
use crate::model::run::{ProcessFigures, Run};
use crate::util::{Style, fmt_count, fmt_ns};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Processes of the tree shown in the terminal report without `--all-processes` (the JSON and the
/// page have every process).
const TREE_LINES: usize = 60;

/// The terminal text: totals, the tree, and the table and findings by program. A tree of more
/// than `TREE_LINES` processes shows its busiest ones (by CPU time) and the processes above them,
/// in tree order, unless `all` asks for every one.
pub fn render_text(run: &Run, style: Style, all: bool) -> String {
    let mut o = String::new();
    let where_ = run
        .files
        .root
        .as_ref()
        .or(run.files.dir.as_ref())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let programs = run.programs();
    let _ = writeln!(
        o,
        "{} {where_}\n  {} processes of {} programs   wall {}   CPU {}   allocator calls {}   lock wait {}",
        style.bold("stallscope run"),
        run.processes.len(),
        programs.len(),
        fmt_ns(run.wall_ns() as f64),
        fmt_ns(run.total_cpu_ns() as f64),
        fmt_count(run.processes.iter().map(|p| p.alloc_calls).sum()),
        fmt_ns(run.processes.iter().map(|p| p.lock_wait_ns).sum::<u64>() as f64),
    );
    let c = &run.concurrency;
    if run.wall_ns() > 0 {
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
                        run.processes[p].name,
                        run.tree.processes[p].pid,
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
    for (path, why) in &run.unreadable {
        let _ = writeln!(
            o,
            "  {} {}: {why}",
            style.warn("unreadable"),
            path.display()
        );
    }
    if !run.findings.is_empty() {
        let _ = write!(
            o,
            "\n{}\n{}",
            style.bold("Findings of the process tree"),
            crate::findings::render_list(&run.findings, style)
        );
    }
    let _ = writeln!(o, "\n{}", style.bold("Process tree"));
    let walk = run.tree.walk();
    let shown = shown_processes(run, &walk, if all { usize::MAX } else { TREE_LINES });
    for &(p, depth) in walk.iter().filter(|(p, _)| shown[*p]) {
        let f = &run.processes[p];
        let proc_ = &run.tree.processes[p];
        // One line per process: a script passed with -c may hold newlines. The name, not
        // the command: a toolchain's path cut at 60 characters says nothing.
        let mut command = one_line(&f.name, 60);
        if !f.title.is_empty() {
            // Its role (the title it set) and its program (how it started).
            let _ = write!(command, " (started as {})", one_line(&f.started_as, 40));
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
            Run::ending(f)
        );
    }
    let partial = walk
        .iter()
        .filter(|(p, _)| shown[*p] && Run::ending(&run.processes[*p]) == "partial")
        .count();
    if partial > 0 {
        let _ = writeln!(
            o,
            "  partial: {} ended without writing its end (killed by a signal, as a pool's terminate() does, or crashed); its figures stop at its last write",
            if partial == 1 {
                "the process"
            } else {
                "these processes"
            }
        );
    }
    let hidden = walk.len() - shown.iter().filter(|&&s| s).count();
    if hidden > 0 {
        let _ = writeln!(
            o,
            "  ... and {hidden} more processes, each with less CPU time than those shown (`report --all-processes` lists every one)"
        );
    }
    let _ = writeln!(o, "\n{}", style.bold("By program"));
    let _ = writeln!(
        o,
        "  {:<20} {:>9} {:>11} {:>11} {:>15} {:>11}",
        "program", "processes", "wall (sum)", "CPU", "allocator calls", "lock wait"
    );
    for (name, members) in &programs {
        let sum = |f: &dyn Fn(&ProcessFigures) -> u64| -> u64 {
            members.iter().map(|&p| f(&run.processes[p])).sum()
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
    let analysed = run
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
            run.processes.len()
        ))
    );
    let mut any = false;
    for (name, members) in &programs {
        for (id, title, count) in run.program_findings(members) {
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

/// The run as JSON (the `run` key of `report --json` on a run): every process with its place in
/// the tree, the programs, the totals, the run's concurrency and the files it could not read.
#[derive(Serialize)]
pub struct RunJson<'a> {
    root: Option<String>,
    directory: Option<String>,
    launched: Option<usize>,
    roots: &'a [usize],
    processes: Vec<ProcessJson<'a>>,
    programs: Vec<ProgramJson>,
    totals: TotalsJson,
    concurrency: ConcurrencyJson<'a>,
    /// Findings of the process tree as a whole (also first among the launched process's).
    findings: &'a [crate::findings::Finding],
    unreadable: Vec<UnreadableJson<'a>>,
}

#[derive(Serialize)]
struct ProcessJson<'a> {
    index: usize,
    pid: u32,
    ppid: u32,
    parent: Option<usize>,
    depth: Option<usize>,
    adopted: bool,
    children: &'a [usize],
    program: &'a str,
    name: &'a str,
    /// The command line it started with.
    command: &'a [String],
    /// The title it gave itself (its role: `postgres: checkpointer`), its words joined by
    /// spaces; None where it kept its command line.
    title: Option<String>,
    profiles: Vec<String>,
    wall_ns: u64,
    cpu_ns: u64,
    alloc_calls: u64,
    lock_wait_ns: u64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    complete: bool,
    /// None: not worked out for this process.
    findings: Option<Vec<ProcessFindingJson<'a>>>,
}

#[derive(Serialize)]
struct ProcessFindingJson<'a> {
    id: &'a str,
    severity: Severity,
    title: &'a str,
    stake_ns: Option<u64>,
}

#[derive(Serialize)]
struct ProgramJson {
    program: String,
    processes: Vec<usize>,
    wall_ns: u64,
    cpu_ns: u64,
    alloc_calls: u64,
    lock_wait_ns: u64,
    findings: Vec<ProgramFindingJson>,
}

#[derive(Serialize)]
struct ProgramFindingJson {
    id: String,
    title: String,
    /// How many of the program's processes have it.
    processes: usize,
}

#[derive(Serialize)]
struct TotalsJson {
    processes: usize,
    programs: usize,
    wall_ns: u64,
    cpu_ns: u64,
    alloc_calls: u64,
    lock_wait_ns: u64,
}

#[derive(Serialize)]
struct ConcurrencyJson<'a> {
    cpus: u32,
    mean_busy_cpus: f64,
    bin_ns: u64,
    busy_cpus: &'a [f64],
    longest_serial: Option<SerialJson<'a>>,
}

#[derive(Serialize)]
struct SerialJson<'a> {
    begin_ns: u64,
    end_ns: u64,
    mean_busy_cpus: f64,
    process: Option<usize>,
    name: Option<&'a str>,
    share: f64,
}

#[derive(Serialize)]
struct UnreadableJson<'a> {
    path: String,
    error: &'a str,
}

/// The run as JSON (see [`RunJson`]).
/// Which processes (by index) the tree shows: the `limit` with the most CPU time, and the
/// processes above each (a busy compiler under make under a shell shows its path).
fn shown_processes(run: &Run, walk: &[(usize, usize)], limit: usize) -> Vec<bool> {
    let n = run.processes.len();
    if walk.len() <= limit {
        return vec![true; n];
    }
    let mut by_cpu: Vec<usize> = walk.iter().map(|&(p, _)| p).collect();
    by_cpu.sort_by(|&a, &b| {
        run.processes[b]
            .cpu_ns
            .cmp(&run.processes[a].cpu_ns)
            .then(a.cmp(&b))
    });
    // The parent of each process: the last process one level up before it in the walk.
    let mut parent = vec![None; n];
    let mut path: Vec<usize> = Vec::new();
    for &(p, depth) in walk {
        path.truncate(depth);
        parent[p] = path.last().copied();
        path.push(p);
    }
    let mut shown = vec![false; n];
    let mut count = 0;
    for p in by_cpu {
        let mut chain = Vec::new();
        let mut at = Some(p);
        while let Some(q) = at.filter(|&q| !shown[q]) {
            chain.push(q);
            at = parent[q];
        }
        if count + chain.len() > limit && count > 0 {
            break;
        }
        count += chain.len();
        for q in chain {
            shown[q] = true;
        }
    }
    shown
}

/// `text` on one line (a script passed with -c may hold newlines), cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() > max {
        line.chars().take(max - 3).collect::<String>() + "..."
    } else {
        line
    }
}

pub fn json(run: &Run) -> RunJson<'_> {
    let depth: BTreeMap<usize, usize> = run.tree.walk().into_iter().collect();
    let processes = run
        .processes
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let proc_ = &run.tree.processes[i];
            ProcessJson {
                index: i,
                pid: proc_.pid,
                ppid: proc_.ppid,
                parent: proc_.parent,
                depth: depth.get(&i).copied(),
                adopted: proc_.adopted,
                children: &proc_.children,
                program: &f.program,
                name: &f.name,
                command: &f.command,
                title: (!f.title.is_empty()).then(|| f.title.join(" ")),
                profiles: f.paths.iter().map(|p| p.display().to_string()).collect(),
                wall_ns: f.wall_ns,
                cpu_ns: f.cpu_ns,
                alloc_calls: f.alloc_calls,
                lock_wait_ns: f.lock_wait_ns,
                exit_code: f.exit_code,
                signal: f.signal,
                complete: f.complete,
                findings: f.findings.as_ref().map(|fs| {
                    fs.iter()
                        .map(|f| ProcessFindingJson {
                            id: &f.id,
                            severity: f.severity,
                            title: &f.title,
                            stake_ns: f.stake_ns,
                        })
                        .collect()
                }),
            }
        })
        .collect();
    let programs = run.programs();
    let program_count = programs.len();
    let programs = programs
        .into_iter()
        .map(|(name, members)| {
            let sum = |f: &dyn Fn(&ProcessFigures) -> u64| -> u64 {
                members.iter().map(|&p| f(&run.processes[p])).sum()
            };
            ProgramJson {
                wall_ns: sum(&|p| p.wall_ns),
                cpu_ns: sum(&|p| p.cpu_ns),
                alloc_calls: sum(&|p| p.alloc_calls),
                lock_wait_ns: sum(&|p| p.lock_wait_ns),
                findings: run
                    .program_findings(&members)
                    .into_iter()
                    .map(|(id, title, processes)| ProgramFindingJson {
                        id,
                        title,
                        processes,
                    })
                    .collect(),
                program: name,
                processes: members,
            }
        })
        .collect();
    let c = &run.concurrency;
    RunJson {
        root: run.files.root.as_ref().map(|p| p.display().to_string()),
        directory: run.files.dir.as_ref().map(|p| p.display().to_string()),
        launched: run.root,
        roots: &run.tree.roots,
        processes,
        programs,
        totals: TotalsJson {
            processes: run.processes.len(),
            programs: program_count,
            wall_ns: run.wall_ns(),
            cpu_ns: run.total_cpu_ns(),
            alloc_calls: run.processes.iter().map(|p| p.alloc_calls).sum(),
            lock_wait_ns: run.processes.iter().map(|p| p.lock_wait_ns).sum(),
        },
        concurrency: ConcurrencyJson {
            cpus: c.cpus,
            mean_busy_cpus: c.mean_busy.min(c.cpus as f64),
            bin_ns: c.bin_ns,
            busy_cpus: &c.bins,
            longest_serial: c.serial.as_ref().map(|st| SerialJson {
                begin_ns: st.begin_ns,
                end_ns: st.end_ns,
                mean_busy_cpus: st.mean_busy,
                process: st.process,
                name: st.process.map(|p| run.processes[p].name.as_str()),
                share: st.share,
            }),
        },
        findings: &run.findings,
        unreadable: run
            .unreadable
            .iter()
            .map(|(p, why)| UnreadableJson {
                path: p.display().to_string(),
                error: why,
            })
            .collect(),
    }
}
