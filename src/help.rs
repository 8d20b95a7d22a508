//! `stallscope help [TOPIC]`: each command's help (clap's, with the examples below) and the
//! topics that are not commands, printed from the data the tool itself uses: the findings from
//! the rules file the findings are drawn by, the thread states from the category vocabulary
//! every view speaks. One source: what `help` says is what the report does.
//!
//! The examples are commands a user can paste: `tests/help_examples.rs` runs every one of them
//! (with ./prog, prog.prof and PID standing for a program, its profile and a running process).

use crate::analysis::categories::CATEGORIES;
use crate::findings::rules::{Rule, all_rules};
use clap::CommandFactory;
use std::fmt::Write as _;

/// Arguments of `stallscope help`.
#[derive(clap::Args, Debug)]
pub struct HelpArgs {
    /// A command (run, report, ...), or a topic: findings [ID], states, topics
    #[arg(value_name = "TOPIC")]
    pub topic: Vec<String>,
}

pub const RUN: &str = "Examples:
  stallscope run -- ./prog 4
      profile ./prog with its arguments; writes stallscope-prog-PID.prof and prints a summary
  stallscope run -q -o prog.prof -- ./prog 4
      name the profile; print nothing but the program's own output
  stallscope run --paused -- ./prog 4
      start at full speed with recording off, for `stallscope attach PID` to record windows of it";

pub const ATTACH: &str = "Examples:
  stallscope attach --duration 2 PID
      record 2 s of a running process (started with `run --paused`, or any glibc program, by ptrace)
  stallscope attach --duration 2 -o window.prof PID
      the same, into window.prof";

pub const REPORT: &str = "Examples:
  stallscope report prog.prof
      the findings first, then the threads, the allocator, the locks, the thread states
  stallscope report --json prog.prof
      the same data as JSON (schema stallscope.report/1)
  stallscope report --stacks prog.prof
      with the whole call chain of each site";

pub const BENCH: &str = "Examples:
  stallscope bench -r 3 './prog 1' './prog 2'
      compare two commands in interleaved runs, with confidence intervals
  stallscope bench -r 3 --threads 1,2 './prog {threads}'
      one command at several thread counts";

pub const SCALE: &str = "Examples:
  stallscope scale -r 3 --threads 1,2 -- ./prog {threads}
      measure the program at each thread count, and where the missing speedup went";

pub const EXPORT: &str = "Examples:
  stallscope export --format pprof prog.prof -o prog.pb.gz
      for `go tool pprof`, Parca or Pyroscope
  stallscope export --format collapsed --weight cpu prog.prof -o prog.folded
      collapsed stacks of CPU time, for flame graph scripts and speedscope
  stallscope export --format chrome prog.prof -o prog.trace.json
      a timeline for Perfetto or chrome://tracing";

pub const DIFF: &str = "Examples:
  stallscope diff before.prof after.prof
      what changed between two profiles of the same program (a fix's before and after)";

pub const HTML: &str = "Examples:
  stallscope html prog.prof -o prog.html
      the report, flame graphs and timeline as one self-contained page";

pub const DEMO: &str = "Examples:
  stallscope demo --list
      the case studies, one line each
  stallscope demo --quick serialize
      build, profile and benchmark one case study, slow beside fixed, on small inputs
  stallscope demo
      every case study, at full size (a few minutes)";

pub const TOPICS: &str = "Topics (stallscope help TOPIC):
  run, attach, report, html, export, diff, bench, scale, demo   a command's options and examples
  findings                                                      every finding, by id
  findings ID                                                   one finding: its title, cause, remedy, thresholds
  states                                                        the states a thread's time is split into";

pub fn main(args: HelpArgs) -> anyhow::Result<i32> {
    let words: Vec<&str> = args.topic.iter().map(String::as_str).collect();
    let text = match words.as_slice() {
        [] => format!("{}", crate::cli::Cli::command().render_long_help()),
        ["topics"] => format!("{TOPICS}\n"),
        ["findings"] => findings(),
        ["findings", id] => finding(id)?,
        ["states"] => states(),
        [command, rest @ ..] => {
            let mut cli = crate::cli::Cli::command();
            let Some(mut sub) = cli.find_subcommand_mut(command).cloned() else {
                anyhow::bail!("no command or topic named `{command}`\n\n{TOPICS}");
            };
            if !rest.is_empty() {
                anyhow::bail!("`{command}` takes no topic after it\n\n{TOPICS}");
            }
            sub = sub.bin_name(format!("stallscope {command}"));
            format!("{}", sub.render_long_help())
        }
    };
    println!("{}", text.trim_end());
    Ok(0)
}

/// `{placeholder}` as `<placeholder>`: a template shown as what it becomes.
fn template(s: &str) -> String {
    s.replace('{', "<").replace('}', ">")
}

fn thresholds(rule: &Rule) -> String {
    let s = &rule.severity;
    [
        ("info", s.info),
        ("low", s.low),
        ("medium", s.medium),
        ("high", s.high),
    ]
    .iter()
    .filter_map(|(name, v)| v.map(|v| format!("{name} from {v}")))
    .collect::<Vec<_>>()
    .join(", ")
}

/// A rule's severities, or what stands for them where it has none (its words join another
/// finding's: `siblings-took-the-cpus` tells whose processes a `waiting-for-cpu` waited behind).
fn severities(rule: &Rule) -> String {
    let levels = thresholds(rule);
    if levels.is_empty() {
        "none of its own (its words join another finding)".to_string()
    } else {
        levels
    }
}

fn findings() -> String {
    let mut o = String::from(
        "Findings (stallscope help findings ID for one; docs/FINDINGS.md explains the thresholds):\n",
    );
    for rule in all_rules() {
        let _ = writeln!(o, "  {:<28} {}", rule.id, template(&rule.title));
    }
    o
}

fn finding(id: &str) -> anyhow::Result<String> {
    let Some(rule) = all_rules().find(|r| r.id == id) else {
        anyhow::bail!("no finding named `{id}` (stallscope help findings lists them)");
    };
    let mut o = format!("{}\n  title:  {}\n", rule.id, template(&rule.title));
    // A rule worded by the kind of what it found gives each kind's cause and remedy.
    match rule.params.get("kinds").and_then(|k| k.as_object()) {
        Some(kinds) => {
            for (kind, words) in kinds {
                let text = |k: &str| words.get(k).and_then(|v| v.as_str()).unwrap_or_default();
                let _ = write!(
                    o,
                    "  when {kind}:\n    cause:  {}\n    remedy: {}\n",
                    template(&rule.cause.replace("{kind_cause}", text("cause"))),
                    template(&rule.remedy.replace("{kind_remedy}", text("remedy")))
                );
            }
        }
        None => {
            let _ = write!(
                o,
                "  cause:  {}\n  remedy: {}\n",
                template(&rule.cause),
                template(&rule.remedy)
            );
        }
    }
    let _ = writeln!(o, "  severity by its measure: {}", severities(rule));
    Ok(o)
}

fn states() -> String {
    let mut o = String::from(
        "Thread states (each thread's life split among them; docs/STATES.md tells how):\n",
    );
    for c in CATEGORIES {
        let _ = writeln!(o, "  {:<14} {}  {}", c.key(), c.glyph(), c.words());
    }
    o
}
